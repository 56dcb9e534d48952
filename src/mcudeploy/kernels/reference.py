"""The reference variant: the portable C99 kernels of ``runtime/src`` (the spec, and the
fallback on every core: M0+, M3, host).

Scratch bytes mirror the runtime's ``_scratch_size`` functions
(``runtime/include/mcu_runtime.h``); ``network_init`` re-checks them in C:

* ConvTranspose: one accumulator per output element of one batch,
  ``h * w * c * 4`` bytes (int8 activations) or ``* 8`` (int16);
* every other kernel: 0.
"""
from __future__ import annotations

import math

from ..ir import Node
from .variant import KernelVariant


def reference_scratch_bytes(node: Node) -> int:
    if node.op != "ConvTranspose":
        return 0
    output = node.outputs[0]
    per_batch = math.prod(output.shape[1:]) if output.rank == 4 else math.prod(output.shape)
    return per_batch * (8 if str(node.inputs[0].dtype) == "int16" else 4)


REFERENCE = KernelVariant("reference", (), "portable C99 reference kernels (TFLite Micro's arithmetic)",
                          rank=0, core_requirement="any core",
                          scratch_bytes=reference_scratch_bytes, overlap="reference")
