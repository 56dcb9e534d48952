"""Input-channel split of one oversized layer: an int8 NHWC Conv computed in groups of input
channels, summed in an int32 accumulator, requantized once.

Input: a graph and ``{node name: groups}``. Output: each named Conv
``Y = requant(B + sum_c W[o, i, j, c] (X[c] - zp_x))`` over ``C`` input channels becomes, for the
``k`` groups ``c_g = [b_g, b_{g+1})`` of :func:`~.tile_spatial.partition`,

    A_0 = ConvAccumulate(X, W[..., c_0], B)          int32 [1, OH, OW, O], the bias added once
    A_g = ConvAccumulate(X, W[..., c_g], A_{g-1})    channel_begin = b_g, added onto A_{g-1}
    Y   = RequantizeAccumulator(A_{k-1})             the Conv's multipliers, zero point, clamp

(:mod:`mcudeploy.ir.opdefs.accumulate`). Bit-exact by construction: integer addition is
associative and int32 addition wraps as a ring, so ``A_{k-1} = wrap32(B + sum)`` is the unsplit
kernel's int32 accumulator, requantized with the same multiplier and shift per channel. Every
partial sum is bounded by the unsplit sum's bound (``|B| + C kH kW 255 128``), so the int32
accumulator overflows only where TFLite's unsplit int32 accumulator does; a 16x8 Conv (int16
activations), whose TFLite kernel accumulates in int64, is refused rather than narrowed.

Each partial Conv reads its channels of X in place (``channel_begin``, the pixel stride stays
``C``) instead of a Slice: a Slice would copy ``H W C / k`` bytes per group into a tensor alive
beside X, the very memory this split is for. Use it where the weights or one call's work are
the problem (weights streamed from external flash group by group, an NPU's weight limit): each
group holds ``O kH kW C / k`` weights. It adds a ``4 OH OW O``-byte int32 accumulator (written
in place group after group) and ``k`` passes over the output. The output-channel split
(:mod:`.split_channels`) needs no accumulator; depthwise Convs (one input channel per output
channel) can only be split that way. An unknown node, a layer that is not an int8 Conv, or
fewer than 2 or more groups than input channels is a :class:`~mcudeploy.errors.UsageError`.
"""
from __future__ import annotations

import numpy as np

from ..errors import UsageError
from ..ir import Graph, Node, QuantParams
from .split_channels import take_place
from .tile_spatial import node_by_name, partition


def _check(node: Node, groups: int) -> None:
    """:class:`UsageError` when ``node`` cannot be split by input channels (module docstring)."""
    what = f"input-channel split of node {node.name!r} ({node.op})"
    if node.op != "Conv" or node.attrs["layout"] != "NHWC" or node.inputs[1].const is None:
        raise UsageError(f"{what}: only an NHWC Conv with constant weights can be split by input channels")
    x, w = node.inputs[0], node.inputs[1]
    in_channels = x.shape[3]
    if node.attrs["group"] == in_channels > 1:
        raise UsageError(f"{what}: a depthwise Conv reads one input channel per output channel, so there is "
                         "nothing to sum across groups; split its output channels instead "
                         f"([tiling] channel_splits = {{{node.name} = {groups}}})")
    if node.attrs["group"] != 1:
        raise UsageError(f"{what}: a grouped Conv (group {node.attrs['group']}) is not split by input channels; "
                         "split its output channels instead ([tiling] channel_splits)")
    if str(x.dtype) == "int16":
        raise UsageError(f"{what}: a 16x8 Conv (int16 activations) accumulates in int64 in TFLite's kernel; "
                         "an int32 accumulator between the groups could overflow where the unsplit layer "
                         "does not. Split its output channels instead ([tiling] channel_splits)")
    if str(x.dtype) != "int8" or x.quant is None or w.quant is None or str(w.dtype) != "int8":
        raise UsageError(f"{what}: only an int8 quantized Conv can be split by input channels "
                         "(quantize the model first)")
    if not 2 <= groups <= in_channels:
        raise UsageError(f"{what}: {groups} groups for {in_channels} input channels; use 2 to {in_channels}")


def _accumulator_quant(input_quant: QuantParams, weight_quant: QuantParams, out_channels: int) -> QuantParams:
    """Descriptive: real = A * s_x * s_w[o] (as TFLite quantizes a Conv's bias)."""
    weight_scales = np.broadcast_to(weight_quant.scale, (out_channels,))
    scale = np.float32(input_quant.scale[0]) * weight_scales.astype(np.float32)
    return QuantParams(scale, np.zeros(out_channels, dtype=np.int64), axis=3)


def _requantize_attrs(node: Node, input_quant: QuantParams, weight_quant: QuantParams) -> dict:
    return {"input_scale": float(input_quant.scale[0]), "weight_scales": [float(s) for s in weight_quant.scale],
            "activation_min": node.attrs.get("activation_min"), "activation_max": node.attrs.get("activation_max")}


def split_conv_inputs(graph: Graph, node: Node, groups: int) -> list[str]:
    """Rewrite ``node`` (module docstring); the names of the nodes it became."""
    _check(node, groups)
    x, w, y = node.inputs[0], node.inputs[1], node.outputs[0]
    assert x.quant is not None and w.quant is not None and w.const is not None   # _check saw to it
    accumulator, names = node.input(2), []
    geometry = {key: node.attrs[key] for key in ("strides", "dilations", "pads")}
    for index, (begin, end) in enumerate(partition(x.shape[3], groups)):
        weights = graph.add_constant(f"{w.name}@in{index}", np.ascontiguousarray(w.const[..., begin:end]),
                                     quant=w.quant)
        piece = graph.add_node("ConvAccumulate", [x, weights, accumulator], {**geometry, "channel_begin": begin},
                               name=f"{node.name}@in{index}", before=node)
        accumulator = piece.outputs[0]
        accumulator.quant = _accumulator_quant(x.quant, w.quant, y.shape[3])
        accumulator.layout, accumulator.origin = y.layout, y.display_name
        names.append(piece.name)
    requantize = graph.add_node("RequantizeAccumulator", [accumulator], _requantize_attrs(node, x.quant, w.quant),
                                name=f"{node.name}@requantize", before=node)
    take_place(graph, node, requantize.outputs[0])
    return names + [requantize.name]


class SplitInputChannels:
    """The pass: every ``{node: groups}`` entry (module docstring)."""
    name = "split_input_channels"
    requires = "the named nodes are int8 NHWC Convs (group 1) with constant weights"
    ensures = "each named Conv runs as ConvAccumulate pieces over input-channel groups and one RequantizeAccumulator"

    def __init__(self, splits: dict[str, int]) -> None:
        self.splits = dict(splits)
        self.added: dict[str, list[str]] = {}

    def run(self, graph: Graph) -> bool:
        for name, groups in self.splits.items():
            node = node_by_name(graph, name, "input-channel split")
            self.added[name] = split_conv_inputs(graph, node, groups)
        return bool(self.splits)
