"""Graph rewrites the what-if fixes propose, each one either exact or marked "needs retraining".

    pad_channels(graph, alignment) -> Rewrite        exact
    reduce_skips(graph) -> Rewrite                   needs retraining

**Channel padding** (exact): every tensor read by a convolution (or written by one) whose
channel count ``c`` is not a multiple of the NPU's ``alignment`` grows to ``p = ceil(c / a) x
a``. The channels come from where the tensor is made: a Conv gets ``p - c`` more filters, all
zero (bias 0), a Concat pads its last input the same way, a channel-wise op (activation,
pooling, Resize, Identity) passes the padding to its input. The padded channels are 0 (the
zero point when quantized) everywhere: every reader that mixes channels - a Conv - gets zero
weights for them, so each output is the same sum plus zeros. Same numbers in the float and
in the integer arithmetic (a zero filter's accumulator is 0, requantized to the zero point).
Cost: ``MACC(after) - MACC(before)``.

**Skip reduction** (needs retraining): a 1x1 convolution right after the producer of each
long-lived Concat input (a U-Net skip, alive across ``SKIP_STEPS`` or more nodes) keeps half
its channels, so the tensor that waits for the decoder is half as large; the Concat's reader
loses the weights of the dropped channels. The memory effect is verified by the pipeline; the
accuracy is not (the model must be retrained with the 1x1 convolution).

Both return the rebuilt graph (:func:`.reshape.rebuild`) and one sentence per change.
Anything they cannot rewrite (a depthwise or element-wise reader of a padded tensor, a
tensor no Conv makes) is an :class:`~mcudeploy.errors.UnsupportedError` naming the node.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import UnsupportedError
from ..ir import Graph, Node, QuantParams, Value, get_op
from .reasons import model_input_data
from .reshape import rebuild

CHANNEL_WISE = ("Relu", "Clip", "LeakyRelu", "MaxPool", "AveragePool", "Resize", "Identity", "Sigmoid", "Tanh",
                "HardSwish", "QuantizeLinear", "DequantizeLinear")
SKIP_STEPS = 6


@dataclass
class Rewrite:
    graph: Graph
    changes: list[str] = field(default_factory=list)
    exact: bool = True
    macc_before: int = 0
    macc_after: int = 0


def total_macc(graph: Graph) -> int:
    return sum(int(get_op(node.op).macc(node)) for node in graph.nodes)


def _axis(node: Node) -> int:
    return 1 if node.attrs.get("layout", "NHWC") == "NCHW" else 3


def _channels(value: Value, axis: int) -> int | None:
    return value.shape[axis] if value.rank == 4 else None


class _Padding:
    """Collects padded constants: ``grow`` output channels of producers, ``insert`` zero
    input channels of readers."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.constants: dict[str, tuple[np.ndarray, QuantParams | None]] = {}
        self.changes: list[str] = []
        self.grown: dict[str, list[tuple[int, int]]] = {}      # tensor -> [(offset, count)]

    def _array(self, value: Value) -> np.ndarray:
        if value.name in self.constants:
            return self.constants[value.name][0]
        if value.const is None:
            raise UnsupportedError(f"tensor {value.name!r} is computed at run time: only constant weights "
                                   "and biases can be padded with zeros")
        return value.const

    def _quant(self, value: Value) -> QuantParams | None:
        return self.constants[value.name][1] if value.name in self.constants else value.quant

    def _grow_filters(self, node: Node, count: int) -> None:
        weights, bias = node.inputs[1], node.inputs[2] if len(node.inputs) > 2 else None
        array = self._array(weights)
        extra = np.zeros((count, *array.shape[1:]), dtype=array.dtype)
        quant = self._quant(weights)
        if quant is not None and quant.per_channel:
            quant = QuantParams(np.concatenate([quant.scale, np.repeat(quant.scale[-1:], count)]),
                                np.concatenate([quant.zero_point, np.zeros(count, np.int64)]), quant.axis)
        self.constants[weights.name] = (np.concatenate([array, extra]), quant)
        if bias is not None:
            bias_array, bias_quant = self._array(bias), self._quant(bias)
            if bias_quant is not None and bias_quant.per_channel:
                bias_quant = QuantParams(np.concatenate([bias_quant.scale, np.repeat(bias_quant.scale[-1:], count)]),
                                         np.concatenate([bias_quant.zero_point, np.zeros(count, np.int64)]),
                                         bias_quant.axis)
            self.constants[bias.name] = (np.concatenate([bias_array, np.zeros(count, bias_array.dtype)]), bias_quant)

    def pad_source(self, value: Value, count: int) -> tuple[Value, int]:
        """Make ``value`` ``count`` channels wider where it is made: (the Conv output that
        grows, its channel count before)."""
        node = value.producer
        if node is None:
            raise UnsupportedError(f"tensor {value.name!r} is a graph input: its channels cannot be padded")
        if node.op == "Conv" and node.attrs["group"] == 1:
            channels = value.shape[_axis(node)]
            self._grow_filters(node, count)
            self.changes.append(f"{node.name}: {channels} -> {channels + count} filters ({count} zero filters, "
                                "bias 0)")
            return value, channels
        if node.op == "Concat":
            return self.pad_source(node.inputs[-1], count)
        if node.op in CHANNEL_WISE:
            return self.pad_source(node.inputs[0], count)
        raise UnsupportedError(f"node {node.name!r} ({node.op}) makes tensor {value.name!r}; its channels "
                               "cannot be padded with zeros")

    def _reader_weights(self, node: Node, why: str) -> tuple[Value, np.ndarray, int]:
        """(weights value, current array, input-channel axis) of a Conv that reads a changed tensor."""
        if node.op != "Conv" or node.attrs["group"] != 1:
            raise UnsupportedError(f"node {node.name!r} ({node.op}) reads a tensor whose channels change ({why}); "
                                   "only a (non-depthwise) Conv reader can take that")
        weights = node.inputs[1]
        return weights, self._array(weights), 1 if node.attrs["layout"] == "NCHW" else 3

    def insert_inputs(self, node: Node, offset: int, count: int) -> None:
        """Zero weights for ``count`` new input channels at ``offset`` of Conv ``node``."""
        weights, array, axis = self._reader_weights(node, "zero padding")
        shape = list(array.shape)
        shape[axis] = count
        padded = np.concatenate([np.take(array, range(offset), axis=axis), np.zeros(shape, array.dtype),
                                 np.take(array, range(offset, array.shape[axis]), axis=axis)], axis=axis)
        self.constants[weights.name] = (padded, self._quant(weights))
        self.changes.append(f"{node.name}: {array.shape[axis]} -> {array.shape[axis] + count} input channels "
                            f"(zero weights at {offset}..{offset + count - 1})")

    def remove_inputs(self, node: Node, offset: int, count: int) -> None:
        """Drop the weights of input channels ``offset .. offset + count - 1`` of Conv ``node``."""
        weights, array, axis = self._reader_weights(node, "a halved skip")
        kept = [i for i in range(array.shape[axis]) if not offset <= i < offset + count]
        self.constants[weights.name] = (np.take(array, kept, axis=axis), self._quant(weights))
        self.changes.append(f"{node.name}: {array.shape[axis]} -> {len(kept)} input channels (skip halved)")


def _readers(value: Value, offset: int, count: int, padding: _Padding, seen: set, remove: bool = False) -> None:
    """Propagate a channel change forward to every reader of ``value`` (module docstring):
    through channel-wise ops and Concats to the Convs that mix channels."""
    for node, index in value.uses:
        if (node.name, value.name) in seen:
            continue
        seen.add((node.name, value.name))
        if node.op in CHANNEL_WISE:
            _readers(node.outputs[0], offset, count, padding, seen, remove)
        elif node.op == "Concat":
            before = sum(v.shape[node.attrs["axis"] % 4] for v in node.inputs[:index])
            _readers(node.outputs[0], before + offset, count, padding, seen, remove)
        elif remove:
            padding.remove_inputs(node, offset, count)
        else:
            padding.insert_inputs(node, offset, count)


def unaligned(graph: Graph, alignment: int) -> list[tuple[Value, int]]:
    """Tensors a (non-depthwise) Conv reads whose channels are not a multiple of
    ``alignment``, except the model's input data (:func:`model_input_data`)."""
    found: dict[str, tuple[Value, int]] = {}
    for node in graph.nodes:
        if node.op != "Conv" or node.attrs["group"] != 1:
            continue
        source = node.inputs[0]
        channels = _channels(source, _axis(node))
        if channels is not None and channels % alignment and not model_input_data(source):
            found.setdefault(source.name, (source, channels))
    return list(found.values())


def pad_channels(graph: Graph, alignment: int, rounds: int = 16) -> Rewrite:
    """The exact channel padding of the module docstring: one unaligned tensor at a time,
    the graph rebuilt after each (a padding can align a later tensor too)."""
    original, changes = graph, []
    for _ in range(rounds):
        targets = unaligned(graph, alignment)
        if not targets:
            break
        value, channels = targets[0]
        count = -(-channels // alignment) * alignment - channels
        padding = _Padding(graph)
        source, before = padding.pad_source(value, count)
        _readers(source, before, count, padding, set())
        graph = rebuild(graph, constants=padding.constants)
        changes += padding.changes
    if graph is original:
        raise UnsupportedError(f"every convolution input already has a multiple of {alignment} channels")
    return Rewrite(graph, changes, True, total_macc(original), total_macc(graph))


def _selection(value: Value, kept: int, layout: str, graph: Graph) -> tuple[Value, Value]:
    """Weights and bias of a 1x1 conv that copies the first ``kept`` channels of ``value``
    (one-hot weights; quantized: weight scale 1, so the copy is exact)."""
    channels = value.shape[1 if layout == "NCHW" else 3]
    quantized = value.dtype.is_integer and value.quant is not None
    eye = np.zeros((kept, channels), np.int8 if quantized else np.float32)
    eye[np.arange(kept), np.arange(kept)] = 1
    array = eye[:, :, None, None] if layout == "NCHW" else eye[:, None, None, :]
    weight_quant = QuantParams(np.ones(1, np.float32), np.zeros(1, np.int64)) if quantized else None
    bias_quant = QuantParams(value.quant.scale[:1].copy(), np.zeros(1, np.int64)) \
        if quantized and value.quant is not None else None   # (quantized implies value.quant)
    weights = graph.add_constant(f"{value.name}_half_w", array, quant=weight_quant)
    bias = graph.add_constant(f"{value.name}_half_b", np.zeros(kept, np.int32 if quantized else np.float32),
                              quant=bias_quant)
    return weights, bias


def reduce_skips(graph: Graph) -> Rewrite:
    """The skip reduction of the module docstring (needs retraining)."""
    work = graph.copy()
    position = {node.name: index for index, node in enumerate(work.nodes)}
    padding, skips = _Padding(work), 0
    for node in list(work.nodes):
        if node.op != "Concat" or node.outputs[0].rank != 4 or node.attrs["axis"] % 4 not in (1, 3):
            continue
        axis = node.attrs["axis"] % 4
        layout = "NCHW" if axis == 1 else "NHWC"
        for index, value in enumerate(list(node.inputs)):
            producer = value.producer
            if producer is None or position[node.name] - position.get(producer.name, 0) < SKIP_STEPS \
                    or value.shape[axis] < 2:
                continue
            channels, kept = value.shape[axis], value.shape[axis] // 2
            weights, bias = _selection(value, kept, layout, work)
            conv = work.add_node("Conv", [value, weights, bias], {"layout": layout}, name=f"{producer.name}_skip_half",
                                 output_names=[f"{value.name}_half"], after=producer)
            conv.outputs[0].quant, conv.outputs[0].layout = value.quant, value.layout
            node.set_input(index, conv.outputs[0])
            before = sum(v.shape[axis] for v in node.inputs[:index])
            _readers(node.outputs[0], before + kept, channels - kept, padding, set(), remove=True)
            padding.changes.append(f"{conv.name}: 1x1 conv {channels} -> {kept} channels on skip {value.name!r}")
            skips += 1
    if not skips:
        raise UnsupportedError(f"no Concat reads a tensor made {SKIP_STEPS} or more nodes earlier (a skip)")
    reduced = rebuild(work, constants=padding.constants)
    return Rewrite(reduced, padding.changes, False, total_macc(graph), total_macc(reduced))
