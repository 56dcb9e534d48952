"""Float model vs quantized model on the same samples: the ``mcudeploy validate`` stage.

Input: the float graph, the quantized graph (full integer, mixed or QDQ; compared in its
deployed form, :func:`integer_form`, the graph every other command counts),
:class:`~.data.Samples` for the float model's inputs and optional labels. Steps:

1. pair inputs and outputs of the two models by position (the counts must agree; shapes
   equal, or NCHW float vs NHWC quantized);
2. feed the quantized model: an integer input gets the float samples quantized with its
   QuantParams, ``q = clamp(round_half_even(x / scale) + zero_point)``; a float input gets
   them as they are;
3. run the float model with the ``float`` engine and the quantized one with the ``int``
   engine, batch by batch (as many samples as keep the integer kernels' working arrays
   within 256 MiB: memory is bounded whatever the number of samples; only the outputs are
   kept), with a progress bar; dequantize integer outputs, ``r = scale * (q - zero_point)``;
   with ``per_layer``, this is the one capture pass of :func:`~.layers.compare_layers`
   (the float model after its clean-up passes), which hands each batch's outputs over;
4. per output: :func:`~.metrics.compare_output` (labels go to the first class-score output)
   and :func:`~.thresholds.checks_for`; when the accuracy drop calls for a mixed-precision
   hint and ``per_layer`` was not asked, :func:`~.layers.compare_layers` runs afterwards.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np

from ..driver import deployable_graph
from ..errors import UsageError
from ..ir import Graph, Value, precision
from ..progress import progress_bar
from ..quantize.simulate import batches, samples_per_batch
from ..reference.float_kernels.quant import quantize
from .data import Samples
from .engines import ENGINES
from .layers import LayerReport, as_quantized_layout, compare_layers, layout_match, real
from .metrics import OutputMetrics, class_count, compare_output
from .thresholds import Check, Thresholds, checks_for, mixed_precision_hint, needs_mixed_precision

log = logging.getLogger(__name__)

DEFAULT_RANGE = (-1.0, 1.0)


@dataclass
class ValidationResult:
    float_model: str
    quantized_model: str
    data_source: str
    samples: int
    metrics: list[OutputMetrics]
    checks: list[Check]
    layers: LayerReport | None = None
    hint: str | None = None
    float_outputs: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    quantized_outputs: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [check for check in self.checks if not check.passed]


def _model(graph: Graph) -> str:
    return str(graph.metadata.get("path", graph.name))


def integer_form(graph: Graph) -> Graph:
    """The quantized model as it is deployed: :func:`mcudeploy.driver.deployable_graph` of a
    copy (a QDQ model converted, every zero Pad folded into its Conv), the graph ``plan``,
    ``generate`` and the report count, so every command names the same layers. A float
    model is refused. ``graph`` itself is left as it is."""
    if precision(graph) == "float":
        raise UsageError(f"--quantized {_model(graph)}: the model is not quantized; give the int8 "
                         "model (quantize the float model with mcudeploy quantize)")
    return deployable_graph(graph.copy())


def _pair(kind: str, float_values: list[Value], quantized_values: list[Value],
          float_graph: Graph, quantized_graph: Graph) -> list[tuple[Value, Value, str]]:
    if len(float_values) != len(quantized_values):
        raise UsageError(f"{_model(float_graph)} has {len(float_values)} {kind}(s), "
                         f"{_model(quantized_graph)} has {len(quantized_values)}; give the "
                         "quantized version of the same model")
    pairs = []
    for float_value, value in zip(float_values, quantized_values):
        how = layout_match(float_value.shape, value.shape)
        if how is None:
            raise UsageError(f"{kind} {float_value.name!r} {list(float_value.shape)} of "
                             f"{_model(float_graph)} does not match {kind} {value.name!r} "
                             f"{list(value.shape)} of {_model(quantized_graph)}")
        pairs.append((float_value, value, how))
    return pairs


def class_scores_output(graph: Graph, value: Value) -> bool:
    """Whether the output ``value`` holds class scores, so that top-k agreement means
    something: one class axis (:func:`~.metrics.class_count`), and not a reconstruction
    (an autoencoder's output has as many elements as one of the inputs: MLPerf Tiny's
    anomaly-detection model maps 640 values to 640)."""
    if class_count(value.shape) is None:
        return False
    return all(math.prod(value.shape) != math.prod(source.shape) for source in graph.inputs)


def check_models(float_graph: Graph, quantized_graph: Graph) -> None:
    """Raise :class:`UsageError` unless the two models' inputs and outputs pair up."""
    _pair("input", float_graph.inputs, quantized_graph.inputs, float_graph, quantized_graph)
    _pair("output", float_graph.outputs, quantized_graph.outputs, float_graph, quantized_graph)


def _first_input_quantized(graph: Graph) -> Value | None:
    """The first input if it is quantized, else the output of a QuantizeLinear reading it."""
    if not graph.inputs:
        return None
    value = graph.inputs[0]
    if value.quant is not None:
        return value
    return next((user.outputs[0] for user in value.users if user.op == "QuantizeLinear"), None)


def default_range(quantized_graph: Graph) -> tuple[float, float]:
    """Random-input range: what the quantized model's first input can represent,
    ``[scale * (qmin - zp), scale * (qmax - zp)]``, else :data:`DEFAULT_RANGE`."""
    value = _first_input_quantized(quantized_graph)
    if value is None or value.quant is None or value.quant.per_channel or not value.dtype.is_integer:
        return DEFAULT_RANGE
    info = np.iinfo(value.dtype.numpy)
    scale, zero_point = float(value.quant.scale[0]), int(value.quant.zero_point[0])
    return scale * (info.min - zero_point), scale * (info.max - zero_point)


def quantized_feeds(float_graph: Graph, quantized_graph: Graph, samples: Samples) -> dict[str, np.ndarray]:
    """The float samples as the quantized model's batched feeds (quantized where integer)."""
    feeds = {}
    for float_value, value, how in _pair("input", float_graph.inputs, quantized_graph.inputs,
                                         float_graph, quantized_graph):
        array = as_quantized_layout(samples.arrays[float_value.name], how)
        if value.dtype.is_integer and value.quant is not None:
            array = quantize(array, value.quant, value.dtype.numpy)
        feeds[value.name] = array.astype(value.dtype.numpy, copy=False)
    return feeds


class _OutputParts:
    """Both models' outputs, batch after batch, keyed by the float output name (the pairs
    are positional): float outputs in the quantized layout, quantized ones dequantized."""

    def __init__(self, pairs: list[tuple[Value, Value, str]]) -> None:
        self.pairs = pairs
        self.float: dict[str, list] = {v.name: [] for v, _, _ in pairs}
        self.quantized: dict[str, list] = {v.name: [] for v, _, _ in pairs}

    def add(self, float_arrays: list[np.ndarray], quantized_arrays: list[np.ndarray]) -> None:
        for (float_value, value, how), float_array, array in zip(self.pairs, float_arrays, quantized_arrays,
                                                                 strict=True):
            self.float[float_value.name].append(as_quantized_layout(np.asarray(float_array, np.float32), how))
            self.quantized[float_value.name].append(real(value, array))

    def joined(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        return ({name: np.concatenate(parts) for name, parts in self.float.items()},
                {name: np.concatenate(parts) for name, parts in self.quantized.items()})


def _run_both(float_graph: Graph, quantized_graph: Graph, samples: Samples, feeds: dict, *,
              progress: bool = True) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Float outputs and dequantized quantized outputs, both keyed by the float output name,
    computed batch by batch (:func:`~mcudeploy.quantize.simulate.samples_per_batch` of the
    quantized graph): only the outputs of all samples are kept, never their tensors."""
    parts = _OutputParts(_pair("output", float_graph.outputs, quantized_graph.outputs, float_graph, quantized_graph))
    size = samples_per_batch(quantized_graph)
    with progress_bar(f"validating {_model(quantized_graph)}", samples.count, enabled=progress) as advance:
        for inputs, batch in zip(batches(samples.arrays, size), batches(feeds, size)):
            float_results = ENGINES["float"].run(float_graph, inputs)
            quantized_results = ENGINES["int"].run(quantized_graph, batch)
            parts.add([float_results[v.name] for v in float_graph.outputs],
                      [quantized_results[v.name] for v in quantized_graph.outputs])
            advance(next(iter(batch.values())).shape[0] if batch else 1)
    return parts.joined()


def validate_models(float_graph: Graph, quantized_graph: Graph, samples: Samples, *,
                    labels: np.ndarray | None = None, thresholds: Thresholds = Thresholds(),
                    per_layer: bool = False, progress: bool = True) -> ValidationResult:
    """Run both models on ``samples`` and compare them (see the module docstring)."""
    quantized_graph = integer_form(quantized_graph)
    check_models(float_graph, quantized_graph)
    feeds = quantized_feeds(float_graph, quantized_graph, samples)
    layers = None
    if per_layer:   # one pass: the captures give the outputs too
        parts = _OutputParts(_pair("output", float_graph.outputs, quantized_graph.outputs, float_graph,
                                   quantized_graph))
        layers = compare_layers(float_graph, quantized_graph, samples.arrays, feeds, progress=progress,
                                on_batch=parts.add)
        float_outputs, quantized_outputs = parts.joined()
    else:
        float_outputs, quantized_outputs = _run_both(float_graph, quantized_graph, samples, feeds, progress=progress)
    scores = {v.name for v in float_graph.outputs if class_scores_output(float_graph, v)}
    if labels is not None and not scores:   # labels say it is a classifier, whatever the shapes
        scores = {v.name for v in float_graph.outputs if class_count(v.shape)}
    labelled = next((v.name for v in float_graph.outputs if v.name in scores), None)
    metrics = [compare_output(name, float_outputs[name], quantized_outputs[name],
                              labels if name == labelled else None, scores=name in scores)
               for name in float_outputs]
    checks = [check for m in metrics for check in checks_for(m, thresholds)]
    hint_needed = needs_mixed_precision(metrics)
    if layers is None and hint_needed:
        layers = compare_layers(float_graph, quantized_graph, samples.arrays, feeds, progress=progress)
    hint = mixed_precision_hint(layers.most_sensitive()) if hint_needed and layers else None
    return ValidationResult(_model(float_graph), _model(quantized_graph), samples.source,
                            samples.count, metrics, checks, layers, hint,
                            float_outputs, quantized_outputs)
