"""Why a node cannot run on the NPU: one named predicate per reason.

Input: an IR node and the target's :class:`~mcudeploy.targets.Npu`. Output: ``None`` when
the predicate has no objection, else a :class:`Reason` whose message says what (the op and
node), where (the tensor or attribute), by how much (the numbers) and what to do.

Predicates register with ``@predicate(code)`` and run in registration order; the mapper
(:mod:`.mapper`) collects every objection, so a user sees all reasons at once.

The checks, for the NPU's limits read from the target file:

* ``op-unsupported``: the op is not in the NPU's ``ops`` list;
* ``dtype-unsupported``: an activation (non-constant input or output) has a dtype outside
  the NPU's ``dtypes`` (typically a float op left in an int8 graph);
* ``channels-unaligned``: only when ``strict_channel_alignment``: input or output channels
  are not a multiple of ``channel_alignment`` (otherwise lint warns about the padding);
* ``kernel-too-large`` / ``stride-too-large``: a window larger than ``max_kernel`` or a
  stride larger than ``max_stride`` (0 = no limit);
* ``dimension-too-large``: an activation dimension larger than ``max_dimension``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..ir import Node, Value
from ..targets import Npu

CHANNEL_OPS = {"Conv", "ConvTranspose", "BatchNormalization", "MaxPool", "AveragePool",
               "GlobalAveragePool"}
"""Ops with a ``layout`` attribute whose rank-4 tensors have a channel axis."""
WINDOW_OPS = {"Conv", "ConvTranspose", "MaxPool", "AveragePool"}


@dataclass(frozen=True)
class Reason:
    """Why a mapping predicate accepted or refused a node."""
    code: str
    message: str


PredicateFn = Callable[[Node, Npu], "Reason | None"]
PREDICATES: dict[str, PredicateFn] = {}


def predicate(code: str) -> Callable[[Callable[[Node, Npu], str | None]], PredicateFn]:
    """Register a check returning a message (an objection) or ``None`` as predicate ``code``."""
    def register(check: Callable[[Node, Npu], str | None]) -> PredicateFn:
        def run(node: Node, npu: Npu) -> Reason | None:
            message = check(node, npu)
            return None if message is None else Reason(code, message)
        run.__doc__ = check.__doc__
        PREDICATES[code] = run
        return run
    return register


def reasons_against(node: Node, npu: Npu) -> list[Reason]:
    """Every predicate's objection to running ``node`` on ``npu`` (empty: it can run there)."""
    return [reason for check in PREDICATES.values() if (reason := check(node, npu)) is not None]


def activations(node: Node) -> list[Value]:
    """Non-constant inputs and the outputs of ``node``."""
    return [v for v in node.inputs if v is not None and not v.is_constant] + list(node.outputs)


def channel_count(value: Value, layout: str) -> int | None:
    if value.rank != 4:
        return None
    return value.shape[1] if layout == "NCHW" else value.shape[3]


def window(node: Node) -> tuple[int, ...] | None:
    """The (kH, kW) of a convolution or pooling node, else ``None``."""
    if node.op in ("MaxPool", "AveragePool"):
        return tuple(node.attrs["kernel_shape"])
    if node.op in ("Conv", "ConvTranspose"):
        weights = node.inputs[1].shape
        return tuple(weights[2:4]) if node.attrs["layout"] == "NCHW" else tuple(weights[1:3])
    return None


@predicate("op-unsupported")
def op_unsupported(node: Node, npu: Npu) -> str | None:
    """The op is not in the NPU's op list."""
    if node.op in npu.ops:
        return None
    return (f"node {node.name!r}: the {npu.name} has no {node.op}; it runs on the CPU. "
            f"Replace it with an op the NPU runs, move it to the end of the model, or accept "
            f"the CPU time")


@predicate("dtype-unsupported")
def dtype_unsupported(node: Node, npu: Npu) -> str | None:
    """An activation dtype the NPU does not compute in."""
    bad = [v for v in activations(node) if v.dtype.value not in npu.dtypes]
    if not bad:
        return None
    names = ", ".join(f"{v.name!r} ({v.dtype})" for v in bad[:3])
    accepted = "/".join(sorted(npu.dtypes))
    if any(v.dtype.is_float for v in bad) and not any(d.startswith("float") for d in npu.dtypes):
        return (f"node {node.name!r} ({node.op}): a float op left in an {accepted} graph: "
                f"{names}; the {npu.name} computes only {accepted}. Quantize this op (give it "
                "quantization parameters / calibrate it) or expect CPU float time")
    return (f"node {node.name!r} ({node.op}): tensor(s) {names} have a dtype the {npu.name} does "
            f"not support (only {accepted}); requantize them to {accepted}")


@predicate("channels-unaligned")
def channels_unaligned(node: Node, npu: Npu) -> str | None:
    """Channels not a multiple of the NPU alignment, when the NPU refuses such tensors."""
    if not npu.strict_channel_alignment or npu.channel_alignment <= 1 or node.op not in CHANNEL_OPS:
        return None
    alignment = npu.channel_alignment
    for value in activations(node):
        channels = channel_count(value, node.attrs["layout"])
        if channels is not None and channels % alignment:
            padded = -(-channels // alignment) * alignment
            return (f"node {node.name!r} ({node.op}): tensor {value.name!r} has {channels} "
                    f"channels, not a multiple of {alignment} ({padded - channels} short of "
                    f"{padded}); the {npu.name} needs aligned channels. Change the layer width "
                    f"to {padded}")
    return None


@predicate("kernel-too-large")
def kernel_too_large(node: Node, npu: Npu) -> str | None:
    """A convolution or pooling window beyond the NPU's maximum."""
    size = window(node)
    if not npu.max_kernel or size is None or max(size) <= npu.max_kernel:
        return None
    if node.op in ("MaxPool", "AveragePool"):
        fix = ("if the window covers the whole feature map use GlobalAveragePool / a global "
               "max, else pool in two smaller steps")
    else:
        fix = f"use stacked layers of at most {npu.max_kernel}x{npu.max_kernel} (e.g. 3x3) instead"
    return (f"node {node.name!r} ({node.op}): kernel {size[0]}x{size[1]} exceeds the "
            f"{npu.name} maximum of {npu.max_kernel} by {max(size) - npu.max_kernel}; {fix}")


@predicate("stride-too-large")
def stride_too_large(node: Node, npu: Npu) -> str | None:
    """A stride beyond the NPU's maximum."""
    if not npu.max_stride or node.op not in WINDOW_OPS:
        return None
    strides = tuple(node.attrs["strides"])
    if max(strides) <= npu.max_stride:
        return None
    return (f"node {node.name!r} ({node.op}): stride {strides[0]}x{strides[1]} exceeds the "
            f"{npu.name} maximum of {npu.max_stride}; split it into a stride-{npu.max_stride} "
            "layer followed by pooling, or subsample the input")


@predicate("dimension-too-large")
def dimension_too_large(node: Node, npu: Npu) -> str | None:
    """An activation dimension beyond the NPU's maximum."""
    if not npu.max_dimension:
        return None
    for value in activations(node):
        for axis, size in enumerate(value.shape):
            if size > npu.max_dimension:
                excess = size - npu.max_dimension
                return (f"node {node.name!r} ({node.op}): tensor {value.name!r} "
                        f"{value.type_str()} has dimension {axis} = {size}, {excess} over the "
                        f"{npu.name} maximum of {npu.max_dimension}; split the tensor "
                        "(Split / Slice) or reduce the input size")
    return None
