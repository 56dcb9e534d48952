"""Layer-by-layer comparison of a float model and its quantized version (``--per-layer``).

Input: both graphs and the same samples (the float feeds, the quantized feeds). Both models
run with ``capture=True``, batch by batch (memory: one batch's tensors; the figures below
are sums over the batches); each compute node of the quantized graph (QuantizeLinear /
DequantizeLinear excluded) is paired with a float tensor, its integer output dequantized
with its QuantParams (``r = scale * (q - zero_point)``), and compared:
``cosine``, ``max |r_float - r_quantized|`` and ``sqnr_db = 10 log10(sum r_f^2 / sum (r_f - r_q)^2)``.

The float graph is compared after the ``cleanup`` pipeline (BatchNorm folded, activations
fused, NHWC), the form the quantizer starts from, so that its nodes line up with the
quantized ones; it computes the same numbers. Matching rule, in this order:

1. by tensor name: the quantized tensor's name, or that name without a ``_int8`` / ``_int16``
   / ``_int32`` suffix, names a float tensor (:mod:`mcudeploy.quantize.apply` keeps names);
2. by node name: a float node has the quantized node's name (names survive the ONNX QDQ
   round trip, where tensor names get suffixes);
3. by position: the op-type sequences of the two graphs' compute nodes are aligned
   (``difflib.SequenceMatcher``, longest common blocks); nodes in matching blocks pair up in
   order. This pairs TFLite float / int8 exports of one network, whose tensor names differ.

Either way the shapes must agree, directly or as NCHW (float) vs NHWC (quantized), in which
case the float tensor is transposed. Unpaired nodes are not reported.

A jump: each compared tensor gets the SQNR it *receives*: the lowest SQNR among the tensors
its node reads (through unpaired nodes, back to the nearest compared ones; a graph input
counts with its own input quantization error), capped at the SQNR of a well-scaled tensor
of that width, ``6.02 * bits + 4.77 - 20 log10(4)`` dB (40.9 dB for int8: full scale at four
standard deviations). The node's ``drop_db`` is received minus its own SQNR; the first node
in graph order whose drop exceeds ``JUMP_DB`` = 20 dB -- a hundredfold rise in noise power
within one layer -- is the first jump. Healthy int8 layers lose a few dB (up to ~15 dB on
random inputs for the MLPerf Tiny models); a wrong scale loses 20 to 40.
"""
from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..ir import Graph, Node, Value
from ..ir.precision import EDGE_OPS
from ..passes.pipelines import run_pipeline
from ..progress import progress_bar
from ..quantize.metrics import Agreement
from ..quantize.simulate import batches, samples_per_batch
from .engines import ENGINES

JUMP_DB = 20.0
CAPTURE_BYTES = 512 << 20   # a capture holds every tensor of the batch in both models
SUFFIXES = ("_int8", "_int16", "_int32")


@dataclass(frozen=True)
class LayerComparison:
    node: str
    op: str
    float_tensor: str
    quantized_tensor: str
    matched_by: str   # "name", "node name" or "position"
    cosine: float
    max_abs_error: float
    sqnr_db: float
    drop_db: float    # SQNR received from the node's inputs minus its own


@dataclass
class LayerReport:
    layers: list[LayerComparison]
    first_jump: str | None   # node name
    jump_db: float = JUMP_DB
    deployed: tuple[tuple[str, str], ...] = ()   # (node, op) of every node of the deployed graph, in order

    @property
    def deployed_layers(self) -> int:
        """Nodes of the quantized graph as deployed: the count ``plan`` and ``generate`` print."""
        return len(self.deployed) or len(self.layers)

    @property
    def not_compared(self) -> list[str]:
        """Deployed nodes without a float tensor to compare with (QuantizeLinear, a layout Reshape)."""
        compared = {layer.node for layer in self.layers}
        return [node for node, _ in self.deployed if node not in compared]

    def most_sensitive(self, count: int = 3) -> list[str]:
        """Node names with the largest SQNR drop, largest first."""
        ranked = sorted(self.layers, key=lambda layer: -layer.drop_db)
        return [layer.node for layer in ranked[:count] if layer.drop_db > 0]


def _compute_nodes(graph: Graph) -> list[Node]:
    return [node for node in graph.nodes if node.op not in EDGE_OPS]


def layout_match(float_shape: tuple, quantized_shape: tuple) -> str | None:
    """``"same"``, ``"nchw"`` (float NCHW vs quantized NHWC) or ``None``."""
    if float_shape == quantized_shape:
        return "same"
    if len(float_shape) == 4 and (float_shape[0], *float_shape[2:], float_shape[1]) == quantized_shape:
        return "nchw"
    return None


def _pair_by_name(float_graph: Graph, quantized_graph: Graph) -> dict[str, tuple[Value, Value, Node, str]]:
    """Rules 1 and 2 of the module docstring: by tensor name, then by node name."""
    float_values = {v.name: v for v in float_graph.values() if not v.is_constant}
    float_nodes = {node.name: node for node in _compute_nodes(float_graph)}
    pairs: dict[str, tuple[Value, Value, Node, str]] = {}
    for node in _compute_nodes(quantized_graph):
        value = node.outputs[0]
        names = [value.name] + [value.name[:-len(s)] for s in SUFFIXES if value.name.endswith(s)]
        candidates = [(float_values.get(name), "name") for name in names]
        twin = float_nodes.get(node.name)
        candidates.append((twin.outputs[0] if twin is not None else None, "node name"))
        for other, how in candidates:
            if other is not None and layout_match(other.shape, value.shape):
                pairs[node.name] = (other, value, node, how)
                break
    return pairs


def match_tensors(float_graph: Graph, quantized_graph: Graph) -> list[tuple[Value, Value, Node, str]]:
    """``(float value, quantized value, quantized node, how)`` pairs, in quantized graph order."""
    pairs = _pair_by_name(float_graph, quantized_graph)
    used = {pair[0].name for pair in pairs.values()}
    float_nodes, quantized_nodes = _compute_nodes(float_graph), _compute_nodes(quantized_graph)
    matcher = difflib.SequenceMatcher(None, [n.op for n in float_nodes],
                                      [n.op for n in quantized_nodes], autojunk=False)
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            float_value = float_nodes[block.a + offset].outputs[0]
            node = quantized_nodes[block.b + offset]
            if (node.name not in pairs and float_value.name not in used
                    and layout_match(float_value.shape, node.outputs[0].shape)):
                pairs[node.name] = (float_value, node.outputs[0], node, "position")
                used.add(float_value.name)
    order = {node.name: index for index, node in enumerate(quantized_graph.nodes)}
    return sorted(pairs.values(), key=lambda pair: order[pair[2].name])


def real(value: Value, array: np.ndarray) -> np.ndarray:
    """A captured ``(N, *shape)`` tensor as real numbers (integer tensors dequantized)."""
    params = value.quant
    if params is None or not value.dtype.is_integer:
        return np.asarray(array, dtype=np.float32)
    shape = (1,) + params.broadcast_shape(len(value.shape))
    return (params.scale.reshape(shape)
            * (np.asarray(array).astype(np.int64) - params.zero_point.reshape(shape))).astype(np.float32)


def as_quantized_layout(array: np.ndarray, how: str | None) -> np.ndarray:
    """A float ``(N, *shape)`` tensor in the quantized tensor's layout (NCHW -> NHWC)."""
    return np.moveaxis(array, 2, -1) if how == "nchw" else array


def _ceiling_db(value: Value) -> float:
    bits = value.dtype.itemsize * 8 if value.dtype.is_integer else 24
    return 6.02 * bits + 4.77 - 20.0 * math.log10(4.0)


def _received(graph: Graph, measured: dict[str, float], input_sqnr: dict[str, float]) -> dict[str, float]:
    """For each node output value name, the SQNR its node receives from its inputs (see the
    module docstring); ``measured`` holds the SQNR of the compared values."""
    level = {v.name: min(input_sqnr.get(v.name, math.inf), _ceiling_db(v)) for v in graph.inputs}
    received: dict[str, float] = {}
    for node in graph.nodes:
        flowing = min((level.get(v.name, math.inf) for v in node.inputs
                       if v is not None and not v.is_constant), default=math.inf)
        for value in node.outputs:
            received[value.name] = min(flowing, _ceiling_db(value))
            own = measured.get(value.name)
            level[value.name] = flowing if own is None else min(own, _ceiling_db(value))
    return received


def _add_inputs(levels: dict[str, Agreement], float_graph: Graph, quantized_graph: Graph,
                float_feeds: dict[str, np.ndarray], quantized_feeds: dict[str, np.ndarray]) -> None:
    """Accumulate each quantized graph input against the float input at the same position."""
    for float_value, value in zip(float_graph.inputs, quantized_graph.inputs):
        how = layout_match(float_value.shape, value.shape)
        if how is not None:
            reference = as_quantized_layout(float_feeds[float_value.name], how)
            levels.setdefault(value.name, Agreement()).add(reference, real(value, quantized_feeds[value.name]))


def _add_pair(agreement: Agreement, pair: tuple[Value, Value, Node, str], float_capture: dict,
              quantized_capture: dict) -> None:
    float_value, value, _, _ = pair
    reference = as_quantized_layout(np.asarray(float_capture[float_value.name], np.float32),
                                    layout_match(float_value.shape, value.shape))
    agreement.add(reference, real(value, quantized_capture[value.name]))


def compare_layers(float_graph: Graph, quantized_graph: Graph, float_feeds: dict[str, np.ndarray],
                   quantized_feeds: dict[str, np.ndarray], *, progress: bool = True,
                   on_batch: Callable[[list, list], None] | None = None) -> LayerReport:
    """Run both models with capture, batch by batch, and compare every paired tensor: per
    pair the sums of :class:`~mcudeploy.quantize.metrics.Agreement` (and the largest error)
    accumulate over the batches, so memory is one batch's tensors whatever the number of
    samples.

    ``quantized_graph`` must run on the ``int`` engine as it is: the deployed form
    (:func:`~.compare.integer_form`), so that the layers compared are the layers deployed.
    ``on_batch(float outputs, quantized outputs)`` (graph outputs by position) sees every
    batch, so that the caller needs no second pass for the outputs.
    """
    float_graph = float_graph.copy()
    run_pipeline(float_graph, "cleanup")
    pairs = match_tensors(float_graph, quantized_graph)
    agreements = {pair[1].name: Agreement() for pair in pairs}
    inputs: dict[str, Agreement] = {}
    size = samples_per_batch(quantized_graph, CAPTURE_BYTES)
    count = next(iter(float_feeds.values())).shape[0] if float_feeds else 0
    with progress_bar(f"per-layer comparison of {quantized_graph.name}", count, enabled=progress) as advance:
        for float_batch, quantized_batch in zip(batches(float_feeds, size), batches(quantized_feeds, size)):
            float_capture = ENGINES["float"].run(float_graph, float_batch, capture=True)
            quantized_capture = ENGINES["int"].run(quantized_graph, quantized_batch, capture=True)
            for pair in pairs:
                _add_pair(agreements[pair[1].name], pair, float_capture, quantized_capture)
            _add_inputs(inputs, float_graph, quantized_graph, float_batch, quantized_batch)
            if on_batch is not None:
                on_batch([float_capture[v.name] for v in float_graph.outputs],
                         [quantized_capture[v.name] for v in quantized_graph.outputs])
            del float_capture, quantized_capture
            advance(next(iter(quantized_batch.values())).shape[0] if quantized_batch else 1)
    measured = {name: agreement.sqnr_db for name, agreement in agreements.items()}
    received = _received(quantized_graph, measured, {name: a.sqnr_db for name, a in inputs.items()})
    layers = []
    for float_value, value, node, how in pairs:
        agreement = agreements[value.name]
        drop = received[value.name] - min(agreement.sqnr_db, _ceiling_db(value))
        layers.append(LayerComparison(node.name, node.op, float_value.name, value.name, how, agreement.cosine,
                                      agreement.max_abs_error, agreement.sqnr_db, 0.0 if math.isnan(drop) else drop))
    first = next((layer.node for layer in layers if layer.drop_db > JUMP_DB), None)
    return LayerReport(layers, first, deployed=tuple((node.name, node.op) for node in quantized_graph.nodes))
