"""Which kernels write their output with a channel stride: the one table the planner and the
code generator both read.

An NHWC channel concatenation ``concat([A, B], axis=C)`` is done in place when each input's
producer writes straight into its channel slice of the output: pixel ``p``, channel ``k`` of
input ``i`` is element ``p * C_total + C_offset_i + k``. The runtime says so with
``mcu_dims.c_stride`` (``runtime/include/mcu_runtime.h``: elements from one pixel to the
next, 0 = dense); the kernels that honour it for their output are listed here, by kernel
variant name, each with the nodes it honours it for. Every other kernel rejects a strided
output (``MCU_ERR_ARG``), so the planner (:mod:`mcudeploy.plan.reuse`, alias
``channel-slice``) only makes the alias when :func:`strided_output_refusal` of the
producer's chosen variant is None, and the code generator checks the same function before it
writes a ``c_stride``.
"""
from __future__ import annotations

from typing import Callable

from ..ir import Node


def _integer_output(node: Node) -> bool:
    return str(node.outputs[0].dtype) in ("int8", "int16")


def _int8_output(node: Node) -> bool:
    return str(node.outputs[0].dtype) == "int8"


def _four_d(node: Node) -> bool:
    """strided_slice.c walks n, h, w, c: the output pixel stride applies to 4-D outputs."""
    return len(node.outputs[0].shape) == 4


def _nearest(node: Node) -> bool:
    return node.attrs.get("mode") == "nearest"


# variant name -> op -> does the variant's C function honour out c_stride for this node
STRIDED_OUTPUT: dict[str, dict[str, Callable[[Node], bool]]] = {
    # conv.c (conv2d and depthwise, s8 and s16 share one core), pool.c, resize.c (nearest),
    # elementwise.c (Add / Sub / Mul; not binary_math.c's Max / Min / SquaredDifference),
    # strided_slice.c (any element size: a tile's slice of a spilled skip tensor)
    "reference": {"Conv": _integer_output, "MaxPool": _integer_output, "AveragePool": _integer_output,
                  "Resize": _nearest, "Add": _integer_output, "Sub": _integer_output, "Mul": _integer_output,
                  "Slice": _four_d},
    "dsp-conv": {"Conv": _int8_output},
    "dsp-depthwise": {"Conv": _int8_output},
    "dsp-pool": {"MaxPool": _int8_output, "AveragePool": _int8_output},
    "dsp-elementwise": {"Add": _int8_output, "Mul": _int8_output},   # dsp/elementwise_dsp.c: a run per pixel
    "mve-conv": {"Conv": _int8_output},
    "mve-depthwise": {"Conv": _int8_output},
    "mve-pool": {"MaxPool": _int8_output, "AveragePool": _int8_output},
    "mve-elementwise": {"Add": _int8_output, "Mul": _int8_output},   # mve/elementwise_mve.c: a run per pixel
    "dsp-conv-s16": {"Conv": _integer_output},        # the 16x8 variants (kernels/s16.py)
    "dsp-depthwise-s16": {"Conv": _integer_output},
    "mve-conv-s16": {"Conv": _integer_output},
    "mve-depthwise-s16": {"Conv": _integer_output},
}


def strided_output_refusal(variant: str, node: Node) -> str | None:
    """None when kernel variant ``variant`` writes ``node``'s output with an out c_stride,
    else why not (for the plan's refusal list)."""
    rule = STRIDED_OUTPUT.get(variant, {}).get(node.op)
    if rule is None or not rule(node):
        return (f"the producer {node.name!r} ({node.op}, kernel {variant}) does not write a strided "
                "output (mcu_dims.c_stride)")
    return None
