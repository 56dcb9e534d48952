"""Scratch bytes a node's C runtime kernel needs, for the memory planner's ``scratch_bytes``
callback. The formulas mirror the runtime's ``_scratch_size`` functions
(``runtime/include/mcu_runtime.h``); ``network_init`` re-checks them in C.

* ConvTranspose: one accumulator per output element of one batch,
  ``h * w * c * 4`` bytes (int8 activations) or ``* 8`` (int16).
* every other kernel: 0.
"""
from __future__ import annotations

import math

from ..ir import Node


def scratch_bytes(node: Node) -> int:
    if node.op != "ConvTranspose":
        return 0
    output = node.outputs[0]
    per_batch = math.prod(output.shape[1:]) if output.rank == 4 else math.prod(output.shape)
    return per_batch * (8 if str(node.inputs[0].dtype) == "int16" else 4)
