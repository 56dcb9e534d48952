"""Post-training quantization of a float model, end to end (the library entry point).

``quantize_model(graph, calibration, config)``:

1. refuse models that are not float (already int8 / int16, ONNX QDQ, hybrid, float16
   weights) with a message saying what they are (:func:`check_float_model`);
2. prepare (cleanup passes + integer-friendly rewrites, :mod:`.prepare`);
3. load and check the calibration data, stream it sample by sample through the float model
   and observe every tensor (:mod:`.calibration`, :mod:`.forward`); pick ranges with the
   configured observer;
4. optionally choose mixed precision automatically (:mod:`.sensitivity`);
5. build the quantized graph (:mod:`.apply`) and the report (:mod:`.report`), measured one
   sample at a time on the first ``evaluation_samples`` calibration samples, or fewer for
   a large model (:func:`evaluation_count`).

Memory stays bounded by a few samples' tensors plus the observers' fixed state, whatever
the number of calibration samples; every long loop shows a progress bar with its ETA.
"""
from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import UnsupportedError, UsageError
from ..ir import Graph
from ..progress import phase, progress_bar
from .apply import WEIGHT_GRANULARITIES, QuantizeOptions, quantize_graph
from .calibration import CALIBRATION_THREADS, ImagePreprocessing, calibrate, load_calibration
from .forward import float_runner
from .observers import RANGE_METHODS, needs_histogram, observed_range
from .prepare import prepare_for_quantization
from .report import QuantizationReport, ReportEvaluation
from .sensitivity import MixedPrecisionChoice, OutputScorer, choose_mixed_precision
from .simulate import run_quantized, stack_samples

log = logging.getLogger(__name__)
EVALUATION_VALUES = 1 << 25     # activation values the report's samples may hold in all


@dataclass(frozen=True)
class QuantizationConfig:
    observer: str = "minmax"
    per_channel: bool = True           # False: the older spelling of weights="per-tensor"
    weights: str = "per-channel"       # "per-tensor", or "tflite": Conv per channel, Gemm per tensor
    keep_float: tuple[str, ...] = ()
    int16: tuple[str, ...] = ()
    int8_io: bool = False
    activations: str = "int8"          # "int16": the whole model in 16x8 mode
    auto_mixed: bool = False
    target_cosine: float = 0.99
    target_sqnr: float | None = None
    fallback: str = "int16"
    evaluation_samples: int = 16
    progress: bool = True
    tflite_rounding: bool = False      # float inputs quantized as TFLite's QUANTIZE rounds (a .tflite file)


@dataclass
class QuantizationOutcome:
    graph: Graph                       # the quantized graph
    prepared: Graph                    # the float graph it was derived from
    ranges: dict[str, tuple[float, float]]
    report: QuantizationReport
    mixed: MixedPrecisionChoice | None = None
    unsupported: dict[str, str] = field(default_factory=dict)


def check_float_model(graph: Graph) -> None:
    """Raise :class:`UsageError` / :class:`UnsupportedError` unless ``graph`` is a float model."""
    where = graph.metadata.get("path", graph.name)
    quant_nodes = [n.name for n in graph.nodes if n.op in ("QuantizeLinear", "DequantizeLinear")]
    quantized = [v for v in graph.values() if v.const is None and v.quant is not None
                 and v.dtype.is_integer]
    if quantized or any(v.quant is not None and v.dtype.is_integer for v in graph.inputs):
        kinds = sorted({v.dtype.value for v in quantized})
        raise UsageError(f"{where} is already quantized ({'/'.join(kinds)} activations"
                         f"{', ONNX QDQ' if quant_nodes else ''}); there is nothing to quantize. "
                         "Deploy it as it is (an ONNX QDQ model converts with "
                         "mcudeploy.passes.qdq_to_quantized)")
    int_weights = [v.name for v in graph.constants() if v.quant is not None and v.dtype.is_integer]
    if int_weights:
        raise UnsupportedError(f"{where} is a hybrid model: integer weights ({int_weights[0]!r} and "
                               f"{len(int_weights) - 1} more) with float activations. Quantize the "
                               "float original model instead (TFLite Micro cannot run hybrid models)")
    half = [v.name for v in graph.constants() if v.dtype.value == "float16"]
    if half:
        raise UnsupportedError(f"{where} stores float16 weights ({half[0]!r} and {len(half) - 1} "
                               "more); convert the model to float32 weights first, then quantize")


def _options(config: QuantizationConfig) -> QuantizeOptions:
    if config.activations not in ("int8", "int16"):
        raise UsageError(f"activations {config.activations!r}: choose int8 or int16")
    if config.observer not in RANGE_METHODS:
        raise UsageError(f"unknown observer {config.observer!r}; choose one of "
                         f"{', '.join(RANGE_METHODS)}")
    if config.weights not in WEIGHT_GRANULARITIES:
        raise UsageError(f"weights {config.weights!r}: choose one of {', '.join(WEIGHT_GRANULARITIES)}")
    return QuantizeOptions(per_channel=config.per_channel, weights=config.weights,
                           keep_float=frozenset(config.keep_float),
                           int16=frozenset(config.int16), int8_io=config.int8_io,
                           activation_dtype=config.activations, tflite_rounding=config.tflite_rounding)


def evaluation_count(graph: Graph, config: QuantizationConfig, available: int) -> int:
    """How many samples the report (and the mixed-precision search) are measured on: the
    first ``config.evaluation_samples``, or fewer when those would hold more than
    :data:`EVALUATION_VALUES` activation values (a large model's per-layer figures already
    rest on millions of values per sample), at least one."""
    per_sample = sum(v.size for v in graph.values() if v.const is None)
    by_values = max(1, EVALUATION_VALUES // max(per_sample, 1))
    return max(1, min(config.evaluation_samples, by_values, available))


def quantize_model(graph: Graph, calibration: Any, config: QuantizationConfig = QuantizationConfig(),
                   *, preprocessing: ImagePreprocessing | None = None) -> QuantizationOutcome:
    """Quantize the float ``graph`` with ``calibration`` data (a path or an iterable)."""
    check_float_model(graph)
    options = _options(config)
    with phase(f"preparing {graph.name} for quantization", enabled=config.progress):
        prepared = prepare_for_quantization(graph)
    with phase("reading the calibration data", enabled=config.progress):
        samples = load_calibration(calibration, prepared, preprocessing=preprocessing)
    evaluation = samples[:evaluation_count(prepared, config, len(samples))]
    observed = calibrate(prepared, samples, progress=config.progress, histogram=needs_histogram(config.observer))
    with phase(f"float reference of {len(evaluation)} evaluation sample(s)", enabled=config.progress):
        runner = float_runner(prepared)
        # every tensor of the few evaluation samples (bounded by EVALUATION_VALUES), then the
        # runner (an onnxruntime session keeps its memory arena) is released before the report
        float_captures = [runner(sample, keep=None) for sample in evaluation]
        del runner
    ranges = {name: observed_range(observer, config.observer) for name, observer in observed.items()}
    mixed = None
    if config.auto_mixed:
        float_outputs = [{v.name: capture[v.name] for v in prepared.outputs} for capture in float_captures]
        scorer = OutputScorer(prepared, stack_samples(evaluation), stack_samples(float_outputs))
        mixed = choose_mixed_precision(prepared, ranges, scorer, target_cosine=config.target_cosine,
                                       target_sqnr=config.target_sqnr, fallback=config.fallback,
                                       options=options, progress=config.progress)
        if not mixed.met:
            log.warning("mixed precision: the target was not met even with %d layer(s) in %s",
                        len(mixed.nodes), mixed.fallback)
        chosen = frozenset(mixed.nodes)
        options = (replace(options, int16=options.int16 | chosen) if mixed.fallback == "int16"
                   else replace(options, keep_float=options.keep_float | chosen))
    with phase(f"quantizing {graph.name}", enabled=config.progress):
        result = quantize_graph(prepared, ranges, options)
    report = _report(graph, prepared, result.graph, observed, evaluation, float_captures, config, len(samples))
    report.float_nodes, report.int16_nodes = result.float_nodes, sorted(options.int16)
    return QuantizationOutcome(result.graph, prepared, ranges, report, mixed, result.unsupported)


def _report(graph: Graph, prepared: Graph, quantized: Graph, observed, evaluation: list, float_captures: list,
            config: QuantizationConfig, count: int) -> QuantizationReport:
    """The report, measured sample by sample on ``evaluation`` (:class:`ReportEvaluation`;
    the sums do not depend on the order, so samples run on several threads)."""
    figures, lock = ReportEvaluation(prepared, quantized), threading.Lock()

    def evaluate(sample, float_capture) -> None:
        quantized_capture = run_quantized(quantized, {k: v[None] for k, v in sample.items()}, capture=True)
        with lock:
            figures.add(float_capture, quantized_capture)
            advance()

    threads = max(1, min(CALIBRATION_THREADS, os.cpu_count() or 1, len(evaluation)))
    with progress_bar(f"evaluating {graph.name}", len(evaluation), enabled=config.progress) as advance:
        with ThreadPoolExecutor(threads) as pool:
            for future in [pool.submit(evaluate, *pair) for pair in zip(evaluation, float_captures, strict=True)]:
                future.result()
    return QuantizationReport(
        model=str(graph.metadata.get("path", graph.name)), observer=config.observer, samples=count,
        output_sqnr_db=figures.outputs.sqnr_db, output_cosine=figures.outputs.cosine,
        tensors=figures.tensor_records(observed), layers=figures.layer_records(),
        evaluation_samples=len(evaluation))
