"""Channel split of one oversized layer: an NHWC Conv computed in groups of output channels.

Input: a graph and ``{node name: groups}``. Output: each named Conv ``Y = conv(X, W, B)``
with ``O`` output channels becomes ``groups`` Convs on the weight slices

    Y_g = conv(X, W[o_g : o_g+1], B[o_g : o_g+1])    (per-channel weight scales sliced alike)
    Y   = Concat(Y_0, ..., Y_{k-1}, axis = C)

and a depthwise Conv (``group == C``, channel multiplier 1) slices its input's channels too.
Each output channel is the same integer sum, with the same bias and the same requantization
multiplier (input scale x its own weight scale / output scale) as before, so the result is
bit-exact. This is the output-channel split; the input-channel split, which sums groups of
input channels in an int32 accumulator tensor and requantizes once, is
:mod:`.split_input_channels` (``[tiling] input_channel_splits``; int8 Convs, not depthwise).

Use it where one layer's weights or work buffer are the problem (an NPU's weight limit, a
kernel's per-call scratch, weights streamed from external flash group by group): the
activations are not smaller, the Concat along channels copies (NHWC channel slices are not
contiguous). An unknown node, a layer that is not a Conv, or more groups than channels is a
:class:`~mcudeploy.errors.UsageError`.
"""
from __future__ import annotations

from ..errors import UsageError
from ..ir import Graph, Node, QuantParams
from .tile_spatial import node_by_name, partition


def _sliced_quant(quant: QuantParams | None, begin: int, end: int) -> QuantParams | None:
    if quant is None or not quant.per_channel:
        return quant
    return QuantParams(quant.scale[begin:end], quant.zero_point[begin:end], quant.axis)


def _constant_slice(graph: Graph, value, begin: int, end: int, tag: str):
    if value is None:
        return None
    return graph.add_constant(f"{value.name}@{tag}", value.const[begin:end],
                              quant=_sliced_quant(value.quant, begin, end))


def _check(node: Node, groups: int) -> bool:
    """Whether ``node`` is depthwise; :class:`UsageError` when it cannot be split."""
    what = f"channel split of node {node.name!r} ({node.op})"
    if node.op != "Conv" or node.attrs["layout"] != "NHWC" or node.inputs[1].const is None:
        raise UsageError(f"{what}: only an NHWC Conv with constant weights can be split by output channels")
    out_channels, in_channels = node.outputs[0].shape[3], node.inputs[0].shape[3]
    depthwise = node.attrs["group"] == in_channels > 1
    if node.attrs["group"] != 1 and not (depthwise and out_channels == in_channels):
        raise UsageError(f"{what}: grouped convolutions other than depthwise (multiplier 1) are not split")
    if not 2 <= groups <= out_channels:
        raise UsageError(f"{what}: {groups} groups for {out_channels} output channels; use 2 to {out_channels}")
    return depthwise


def split_conv(graph: Graph, node: Node, groups: int) -> list[str]:
    """Rewrite ``node`` (module docstring); the names of the nodes it became."""
    depthwise = _check(node, groups)
    x, w, b = node.inputs[0], node.inputs[1], node.input(2)
    y = node.outputs[0]
    pieces, names = [], []
    for index, (begin, end) in enumerate(partition(y.shape[3], groups)):
        tag = f"group{index}"
        attrs = dict(node.attrs)
        source = x
        if depthwise:
            cut = graph.add_node("Slice", [x], {"starts": [begin], "ends": [end], "axes": [3], "steps": [1]},
                                 name=f"{node.name}@{tag}:in", before=node)
            source = cut.outputs[0]
            source.quant, source.layout = x.quant, x.layout
            attrs["group"] = end - begin
            names.append(cut.name)
        inputs = [source, _constant_slice(graph, w, begin, end, tag), _constant_slice(graph, b, begin, end, tag)]
        conv = graph.add_node("Conv", inputs, attrs, name=f"{node.name}@{tag}", before=node)
        piece = conv.outputs[0]
        piece.quant, piece.layout, piece.origin = y.quant, y.layout, y.display_name
        pieces.append(piece)
        names.append(conv.name)
    concat = graph.add_node("Concat", pieces, {"axis": 3}, name=f"{node.name}@groups", before=node)
    take_place(graph, node, concat.outputs[0])
    return names + [concat.name]


def take_place(graph: Graph, node: Node, result) -> None:
    """``result`` (the last value of a split) replaces ``node``'s output: its quantization,
    layout, origin, readers and name (the old value is renamed ``NAME@unsplit``); ``node``
    is removed."""
    y = node.outputs[0]
    result.quant, result.layout, result.origin = y.quant, y.layout, y.origin
    graph.replace_all_uses(y, result)
    graph.remove_node(node)
    y.name, result.name = f"{y.name}@unsplit", y.name


class SplitChannels:
    """The pass: every ``{node: groups}`` entry (module docstring)."""
    name = "split_channels"
    requires = "the named nodes are NHWC Convs with constant weights"
    ensures = "each named Conv runs as groups of output channels joined by a channel Concat"

    def __init__(self, splits: dict[str, int]) -> None:
        self.splits = dict(splits)
        self.added: dict[str, list[str]] = {}

    def run(self, graph: Graph) -> bool:
        for name, groups in self.splits.items():
            self.added[name] = split_conv(graph, node_by_name(graph, name, "channel split"), groups)
        return bool(self.splits)
