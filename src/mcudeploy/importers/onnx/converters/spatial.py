"""Window attributes and 1-D lifting shared by Conv, ConvTranspose and pooling.

``auto_pad`` becomes explicit pads (ONNX order ``begin_0.., end_0..``, i.e. for 2-D
``(top, left, bottom, right)``, which is also the IR's order). For ``SAME_*``
``out = ceil(in / stride)`` and ``total = max(0, (out - 1) * stride + (k - 1) * dilation
+ 1 - in)``; SAME_UPPER puts ``floor(total / 2)`` at the beginning, SAME_LOWER
``ceil(total / 2)``.

The IR's spatial ops are 2-D. A 1-D op (input ``[N, C, L]``) is lifted to 2-D with
``H = 1``: inputs get a size-1 axis 2 (constants reshaped, others through ``Unsqueeze``),
window attributes get an identity H entry, and a ``Squeeze`` restores the 1-D output.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import onnx

from ....ir import Value
from ..context import ConversionContext

NCHW = "NCHW"


@dataclass(frozen=True)
class Window:
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads: tuple[int, ...]  # begins then ends

    def lifted(self) -> "Window":
        """The same window as a 2-D one with an identity H axis (no-op when already 2-D)."""
        if len(self.kernel) == 2:
            return self
        (begin, end) = self.pads
        return Window((1, *self.kernel), (1, *self.strides), (1, *self.dilations),
                      (0, begin, 0, end))


def spatial_rank(ctx: ConversionContext, node: onnx.NodeProto, x: Value) -> int:
    """1 or 2 (the spatial dimensions of NC... input ``x``); other ranks are refused."""
    rank = x.rank - 2
    if rank not in (1, 2):
        kind = "3-D" if rank == 3 else f"{rank}-D"
        raise ctx.unsupported(node, f"{kind} {node.op_type} (input {x.type_str()}) is not "
                              "supported; only 1-D and 2-D (NCHW) windows are")
    return rank


def same_pads(sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
              dilations: Sequence[int], upper: bool) -> tuple[int, ...]:
    begins, ends = [], []
    for size, k, stride, dilation in zip(sizes, kernel, strides, dilations):
        out = math.ceil(size / stride)
        total = max(0, (out - 1) * stride + (k - 1) * dilation + 1 - size)
        begin = total // 2 if upper else total - total // 2
        begins.append(begin)
        ends.append(total - begin)
    return tuple(begins + ends)


def resolve_window(ctx: ConversionContext, node: onnx.NodeProto, attrs: dict[str, Any],
                   sizes: Sequence[int], kernel: Sequence[int]) -> Window:
    """Strides, dilations and explicit pads of a conv / pool over spatial ``sizes``."""
    rank = len(sizes)
    strides = tuple(attrs.get("strides") or (1,) * rank)
    dilations = tuple(attrs.get("dilations") or (1,) * rank)
    auto_pad = attrs.get("auto_pad", "NOTSET") or "NOTSET"
    if auto_pad == "NOTSET":
        pads = tuple(attrs.get("pads") or (0,) * (2 * rank))
    elif auto_pad == "VALID":
        pads = (0,) * (2 * rank)
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = same_pads(sizes, kernel, strides, dilations, auto_pad == "SAME_UPPER")
    else:
        raise ctx.unsupported(node, f"auto_pad={auto_pad!r} is not an ONNX value")
    if not len(strides) == len(dilations) == len(kernel) == rank or len(pads) != 2 * rank:
        raise ctx.unsupported(node, f"window attributes do not match {rank} spatial "
                              f"dimension(s): kernel {list(kernel)}, strides {list(strides)}, "
                              f"dilations {list(dilations)}, pads {list(pads)}")
    return Window(tuple(kernel), strides, dilations, pads)


def lift_input(ctx: ConversionContext, node: onnx.NodeProto, index: int, rank: int) -> Value | None:
    """Input ``index`` of ``node``, given a size-1 axis 2 when the op is 1-D."""
    if index >= len(node.input) or not node.input[index]:
        return None
    name = node.input[index]
    if rank == 2:
        return ctx.value(name)
    array = ctx.constant(name)
    if array is not None:
        return ctx.graph.add_constant(f"{name}/2d", np.expand_dims(array, 2))
    unsqueeze = ctx.emit("Unsqueeze", [ctx.value(name)], {"axes": (2,)}, node,
                         name=ctx.helper_name(node, f"to_2d_{index}"), outputs=[f"{name}/2d"])
    return unsqueeze.outputs[0]


def emit_spatial(ctx: ConversionContext, node: onnx.NodeProto, op: str,
                 inputs: Sequence[Value | None], attrs: dict[str, Any], rank: int) -> None:
    """Emit the 2-D IR op for ``node`` (plus the ``Squeeze`` back to 1-D when lifted)."""
    output = node.output[0]
    if rank == 2:
        ctx.emit(op, inputs, attrs, node, outputs=[output]).outputs[0].layout = NCHW
        return
    main = ctx.emit(op, inputs, attrs, node, outputs=[f"{output}/2d"])
    main.outputs[0].layout = NCHW
    ctx.emit("Squeeze", [main.outputs[0]], {"axes": (2,)}, node,
             name=ctx.helper_name(node, "to_1d"), outputs=[output])
