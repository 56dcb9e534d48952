"""Float IR graph + calibration ranges -> quantized IR graph (the TFLite full-integer form).

Input: a graph from :func:`~.prepare.prepare_for_quantization` (cleaned, NHWC) and the
observed range ``[low, high]`` of every float tensor by value name. Output: a new graph in
the form the TFLite importer produces for full-integer models and the integer reference
executor runs:

* int8 activations, asymmetric per tensor (int16 with zero point 0 for ``int16`` nodes);
* Conv / ConvTranspose / Gemm weights int8 symmetric; granularity ``weights``:
  ``per-channel`` (axis 0, all of them; the default), ``per-tensor`` (all; also
  ``per_channel=False``) or ``tflite`` (TFLite's converter: per channel for Conv /
  ConvTranspose, depthwise included, per tensor for Gemm, i.e. fully connected); bias int32
  (int64 in 16x8) with ``scale = s_in * s_w``, zero point 0; weights and bias rounded in
  float32 like TFLite's converter (:mod:`.scheme`);
* fused activations stay clamps (real-valued attributes); a standalone Relu / Clip becomes an
  int -> int QuantizeLinear onto its output's range (the saturation is the clamp);
* TFLite's op constraints from :mod:`.scheme`: fixed Softmax / Sigmoid / Tanh outputs, one
  set of parameters across MaxPool, Reshape, Concat, Pad, ... (union of observed ranges);
* float graph inputs pass a QuantizeLinear, outputs a DequantizeLinear (``int8_io=True``
  keeps them integer instead); float -> int QuantizeLinear rounds halves to even (ONNX),
  or away from zero with ``tflite_rounding`` (TFLite's QUANTIZE, for a TFLite file);
* ``keep_float`` nodes stay float with a DequantizeLinear before and a QuantizeLinear after,
  ``int16`` nodes run in 16x8 mode; unnamed data-movement ops follow their neighbours;
  nodes the integer reference cannot run (its ``prepare`` raises ``UnsupportedError``)
  are kept float automatically, with a warning naming them.

Every node keeps its name; the integer value a node produces keeps the float value's name
(a graph output's integer value gets ``_int8`` / ``_int16`` appended, the final
DequantizeLinear output keeps the name), so reports can compare tensors by name.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from ..errors import UnsupportedError, UsageError
from ..ir import DType, Graph, Node, QuantParams, Value, verify
from ..reference.int_kernels import get_int_kernel
from . import scheme

log = logging.getLogger(__name__)

WEIGHTED_OPS = ("Conv", "ConvTranspose", "Gemm")
CLAMP_OPS = ("Relu", "Clip")
FLOAT = "float32"
WEIGHT_GRANULARITIES = ("per-channel", "per-tensor", "tflite")
PER_TENSOR_IN_TFLITE = frozenset({"Gemm", "MatMul"})


@dataclass(frozen=True)
class QuantizeOptions:
    per_channel: bool = True          # False: the older spelling of weights="per-tensor"
    keep_float: frozenset[str] = frozenset()
    int16: frozenset[str] = frozenset()
    int8_io: bool = False
    activation_dtype: str = "int8"   # "int16": the whole graph in 16x8 mode
    weights: str = "per-channel"      # one of WEIGHT_GRANULARITIES
    tflite_rounding: bool = False     # float -> int QuantizeLinear rounds halves away from zero

    @property
    def granularity(self) -> str:
        return self.weights if self.per_channel else "per-tensor"

    def weights_per_channel(self, op: str) -> bool:
        """Whether the weights of an ``op`` node get one scale per output channel."""
        if self.granularity == "tflite":
            return op not in PER_TENSOR_IN_TFLITE
        return self.granularity == "per-channel"


@dataclass
class QuantizeResult:
    graph: Graph
    float_nodes: list[str] = field(default_factory=list)   # kept float (asked or unsupported)
    unsupported: dict[str, str] = field(default_factory=dict)  # node -> reason


class _Groups:
    """Union-find of value names that must share quantization parameters."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, name: str) -> str:
        self.parent.setdefault(name, name)
        while self.parent[name] != name:
            self.parent[name] = self.parent[self.parent[name]]
            name = self.parent[name]
        return name

    def union(self, first: str, second: str) -> None:
        self.parent[self.find(first)] = self.find(second)


def _check_options(graph: Graph, options: QuantizeOptions) -> None:
    if options.weights not in WEIGHT_GRANULARITIES:
        raise UsageError(f"weight granularity {options.weights!r}: choose one of "
                         f"{', '.join(WEIGHT_GRANULARITIES)}")
    names = {node.name for node in graph.nodes}
    for option, chosen in (("--keep-float", options.keep_float), ("--int16", options.int16)):
        unknown = sorted(set(chosen) - names)
        if unknown:
            raise UsageError(f"{option}: no node named {', '.join(map(repr, unknown))} in the "
                             f"(cleaned) graph; node names are listed by 'mcudeploy analyze "
                             "--optimize'")


class _Builder:
    """Builds the quantized graph node by node (see module docstring)."""

    def __init__(self, graph: Graph, ranges: dict[str, tuple[float, float]],
                 options: QuantizeOptions, float_nodes: set[str]) -> None:
        self.source, self.ranges, self.options = graph, ranges, options
        self.float_nodes = float_nodes
        self.out = Graph(graph.name)
        self.out.metadata = dict(graph.metadata)
        self.reps: dict[tuple[int, str], Value] = {}
        self.home: dict[int, str] = {}
        self.groups = _Groups()
        self.fixed: dict[str, str] = {}   # value name -> op fixing its parameters
        self.outputs = {id(v) for v in graph.outputs}
        self._plan_modes()
        self._plan_groups()

    # -- modes and parameters -----------------------------------------------------------------
    def mode(self, node: Node) -> str:
        return self.modes[node.name]

    def _plan_modes(self) -> None:
        """Named nodes get their precision; data-movement ops (:data:`scheme.SAME_PARAMS_OPS`)
        not named follow their producer, or, at a graph input, their readers when these
        all agree, so that a Reshape between two int16 layers does not drop to int8."""
        chosen = {name: FLOAT for name in self.float_nodes}
        chosen.update({name: "int16" for name in self.options.int16 if name not in chosen})
        self.modes: dict[str, str] = {}
        for node in self.source.nodes:
            mode = chosen.get(node.name, self.options.activation_dtype)
            if node.name not in chosen and node.op in scheme.SAME_PARAMS_OPS:
                producer = node.inputs[0].producer if node.inputs[0] is not None else None
                readers = {chosen.get(user.name) for value in node.outputs for user in value.users}
                if producer is not None:
                    mode = self.modes[producer.name]
                elif len(readers) == 1 and (reader_mode := next(iter(readers))) is not None:
                    mode = reader_mode
            self.modes[node.name] = mode

    def _plan_groups(self) -> None:
        for node in self.source.nodes:
            kind = self.mode(node)
            if kind == FLOAT:
                continue
            if node.op in scheme.SAME_PARAMS_OPS:
                for value in list(node.inputs) + list(node.outputs):
                    if value is not None:
                        self.groups.union(value.name, node.outputs[0].name)
            if node.op in scheme.FIXED_OUTPUT_PARAMS:
                self.fixed[node.outputs[0].name] = node.op
        self.members: dict[str, list[Value]] = {}
        for value in self.source.values():
            self.members.setdefault(self.groups.find(value.name), []).append(value)
        self.fixed_roots = {self.groups.find(name): op for name, op in self.fixed.items()}

    def value_range(self, value: Value) -> tuple[float, float]:
        if value.const is not None:
            return float(value.const.min()), float(value.const.max())
        if value.name not in self.ranges:
            raise UsageError(f"no calibration range for tensor {value.name!r}; calibrate the "
                             "prepared graph (prepare_for_quantization) before quantizing")
        return self.ranges[value.name]

    def group_range(self, value: Value) -> tuple[float, float]:
        members = self.members.get(self.groups.find(value.name)) or [value]
        bounds = [self.value_range(v) for v in members]
        return min(b[0] for b in bounds), max(b[1] for b in bounds)

    def params(self, value: Value, kind: str) -> QuantParams:
        op = self.fixed_roots.get(self.groups.find(value.name))
        if op is not None:
            fixed = scheme.fixed_output_params(op, kind)
            assert fixed is not None  # self.fixed holds ops of FIXED_OUTPUT_PARAMS only
            return fixed
        return scheme.activation_params(*self.group_range(value), kind)

    # -- representations ------------------------------------------------------------------
    def rep(self, value: Value, kind: str) -> Value:
        """``value`` as ``kind`` (float32 / int8 / int16), converting once per kind."""
        if value.const is not None:
            if kind == FLOAT:
                return self.constant(value.name, value.const)
            params = self.params(value, kind)
            return self.constant(value.name, scheme.quantize_array(value.const, params, kind), params)
        key = (id(value), kind)
        if key in self.reps:
            return self.reps[key]
        source = self.reps[(id(value), self.home[id(value)])]
        if kind == FLOAT:
            node = self.out.add_node("DequantizeLinear", [source], name=f"{value.name}_dequantize",
                                     output_names=[f"{value.name}_float"])
        else:
            rounding = "half_away_from_zero" if self.options.tflite_rounding and source.dtype.is_float \
                else "half_to_even"
            node = self.out.add_node("QuantizeLinear", [source], {"to": kind, "rounding": rounding},
                                     name=f"{value.name}_quantize_{kind}",
                                     output_names=[f"{value.name}_{kind}"])
            node.outputs[0].quant = self.params(value, kind)
        node.outputs[0].layout = value.layout
        self.reps[key] = node.outputs[0]
        return node.outputs[0]

    def constant(self, name: str, array: np.ndarray, quant: QuantParams | None = None) -> Value:
        return self.out.add_constant(name, array, quant=quant)

    # -- building -------------------------------------------------------------------------
    def build(self) -> Graph:
        for value in self.source.inputs:
            self._add_input(value)
        for node in self.source.nodes:
            kind = self.mode(node)
            if kind == FLOAT:
                self._float_node(node)
            elif node.op in CLAMP_OPS:
                self._clamp_node(node, kind)
            else:
                self._int_node(node, kind)
        self.out.outputs = [self.rep(v, FLOAT) if not self.options.int8_io else
                            self.reps[(id(v), self.home[id(v)])] for v in self.source.outputs]
        return self.out

    def _add_input(self, value: Value) -> None:
        if self.options.int8_io:
            kind = self.options.activation_dtype
            new = self.out.add_input(value.name, DType(kind), value.shape,
                                     quant=self.params(value, kind), layout=value.layout)
        else:
            kind = FLOAT
            new = self.out.add_input(value.name, value.dtype, value.shape, layout=value.layout)
        self.home[id(value)], self.reps[(id(value), kind)] = kind, new

    def _output_names(self, node: Node, kind: str) -> list[str]:
        return [f"{v.name}_{kind}" if id(v) in self.outputs and kind != FLOAT
                and not self.options.int8_io else v.name for v in node.outputs]

    def _register(self, old: Node, new: Node, kind: str) -> None:
        for before, after in zip(old.outputs, new.outputs):
            after.layout = before.layout
            if kind != FLOAT:
                after.quant = self.params(before, kind)
            self.home[id(before)], self.reps[(id(before), kind)] = kind, after
            if kind != FLOAT and id(before) in self.outputs and not self.options.int8_io:
                final = self.out.add_node("DequantizeLinear", [after], name=f"{before.name}_dequantize",
                                          output_names=[before.name])
                final.outputs[0].layout = before.layout
                self.reps[(id(before), FLOAT)] = final.outputs[0]

    def _float_node(self, node: Node) -> None:
        inputs = [None if v is None else self.rep(v, FLOAT) for v in node.inputs]
        new = self.out.add_node(node.op, inputs, dict(node.attrs), name=node.name,
                                outputs=None if node.op != "Split" else len(node.outputs),
                                output_names=self._output_names(node, FLOAT))
        self._register(node, new, FLOAT)

    def _clamp_node(self, node: Node, kind: str) -> None:
        source = self.rep(node.inputs[0], kind)
        new = self.out.add_node("QuantizeLinear", [source], {"to": kind}, name=node.name,
                                output_names=self._output_names(node, kind))
        self._register(node, new, kind)

    def _int_node(self, node: Node, kind: str) -> None:
        if node.op in WEIGHTED_OPS and node.inputs[1].const is not None:
            inputs = self._weighted_inputs(node, kind)
        else:
            inputs = [None if v is None else self.rep(v, kind) for v in node.inputs]
        new = self.out.add_node(node.op, inputs, dict(node.attrs), name=node.name,
                                outputs=None if node.op != "Split" else len(node.outputs),
                                output_names=self._output_names(node, kind))
        self._register(node, new, kind)

    def _weighted_inputs(self, node: Node, kind: str) -> list[Value | None]:
        x = self.rep(node.inputs[0], kind)
        weights, bias = node.inputs[1], node.input(2)
        assert x.quant is not None and weights.const is not None  # an integer rep; _int_node checked
        input_scale = float(x.quant.scale[0])
        bias_array = None if bias is None or bias.const is None else bias.const.reshape(-1)
        per_channel = self.options.weights_per_channel(node.op)
        scales = scheme.fit_weight_scales_to_bias(weights.const, bias_array, input_scale, per_channel)
        quantized, weight_quant = scheme.weight_params(weights.const, per_channel, scales)
        new_weights = self.constant(weights.name, quantized, weight_quant)
        if bias is None:
            return [x, new_weights]
        if bias_array is None:
            raise UnsupportedError(f"node {node.name!r} ({node.op}): its bias {bias.name!r} is "
                                   "computed at run time; only constant biases can be quantized")
        values, bias_quant = scheme.bias_params(bias_array, input_scale, weight_quant,
                                                "int64" if kind == "int16" else "int32")
        return [x, new_weights, self.constant(bias.name, values, bias_quant)]


def _unsupported_nodes(graph: Graph, built_from: set[str]) -> dict[str, str]:
    """Nodes of ``graph`` (from the source graph) the integer reference refuses, with why."""
    reasons = {}
    for node in graph.nodes:
        if node.name not in built_from or not any(v.dtype.is_integer and v.quant is not None
                                                  for v in node.outputs):
            continue
        try:
            get_int_kernel(node.op).prepare(node)
        except UnsupportedError as err:
            reasons[node.name] = str(err)
    return reasons


def quantize_graph(graph: Graph, ranges: dict[str, tuple[float, float]],
                   options: QuantizeOptions = QuantizeOptions()) -> QuantizeResult:
    """The quantized form of the prepared float ``graph`` (see module docstring)."""
    _check_options(graph, options)
    float_nodes = set(options.keep_float)
    unsupported: dict[str, str] = {}
    names = {node.name for node in graph.nodes}
    for _ in range(len(graph.nodes) + 1):
        quantized = _Builder(graph, ranges, options, float_nodes).build()
        refused = _unsupported_nodes(quantized, names)
        if not refused:
            break
        for name, reason in refused.items():
            log.warning("node %r stays float: %s", name, reason)
        unsupported.update(refused)
        float_nodes |= set(refused)
    verify(quantized)
    quantized.metadata["quantization"] = {
        "activations": options.activation_dtype, "per_channel": options.granularity == "per-channel",
        "weights": options.granularity,
        "float_nodes": sorted(float_nodes), "int16_nodes": sorted(options.int16)}
    order = [node.name for node in quantized.nodes if node.name in names and not any(
        v.dtype.is_integer for v in node.outputs) and node.op not in ("QuantizeLinear", "DequantizeLinear")]
    return QuantizeResult(quantized, order, unsupported)
