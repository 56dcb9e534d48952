"""The reference variant: the portable C99 kernels of ``runtime/src`` (the spec, and the
fallback on every core: M0+, M3, host).

Scratch bytes are the runtime header's own formulas (:mod:`.scratch_formula`, the macros the
C ``_scratch_size`` functions return); ``network_init`` re-checks them in C:

* ConvTranspose: one accumulator per output element of one batch,
  ``MCU_TRANSPOSE_CONV2D_SCRATCH_BYTES(h, w, c, 4)`` (int8 activations) or ``8`` (int16);
* every other kernel: 0.
"""
from __future__ import annotations

from ..ir import Node
from .scratch_formula import scratch_formula
from .variant import KernelVariant


def reference_scratch_bytes(node: Node) -> int:
    if node.op != "ConvTranspose":
        return 0
    n, h, w, c = (1,) * (4 - node.outputs[0].rank) + tuple(node.outputs[0].shape)
    return scratch_formula("MCU_TRANSPOSE_CONV2D_SCRATCH_BYTES", h, w, c, 8 if str(node.inputs[0].dtype) == "int16" else 4)


REFERENCE = KernelVariant("reference", (), "portable C99 reference kernels (TFLite Micro's arithmetic)",
                          rank=0, core_requirement="any core",
                          scratch_bytes=reference_scratch_bytes, overlap="reference")
