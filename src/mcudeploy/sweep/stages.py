"""The built-in stages of a sweep cell (the table is :mod:`.catalogue`): ``stage(context) -> metrics``.

Each stage translates the cell's request into the typed inputs of the library functions the
matching command calls (:mod:`mcudeploy.pipeline` for ``quantize``, ``validate``,
``generate`` and ``validate --on qemu-*``; ``analyze``, ``plan``, ``estimate``, ``search``),
records the command's figures and payload in the cell's run through
:mod:`mcudeploy.runs.capture` (so ``mcudeploy report`` renders a cell like the command's
run), and returns the metrics of :data:`.catalogue.CATALOGUE` it measured. A metric that was
not measured is left out (the table says so); nothing is made up: an estimate with unknown
layers gives no ``latency_ms``, only the sum over the known ones, named as such
(``latency_known_ms``, a lower bound). Errors propagate as the library raises them (an
:class:`~mcudeploy.errors.McuDeployError` with its exit code): the cell fails with it.

``quantize`` with ``[data] calibration = "random"`` calibrates on uniform random inputs: the
byte sizes and the latency do not depend on the ranges, the accuracy does (a warning says so).
"""
from __future__ import annotations

import math
from typing import Any, Callable

from ..errors import UnsupportedError
from ..ir import precision
from ..runs.capture import note_analysis, note_deployment, note_generation, note_quantization, note_validation
from ..runs.current import current_run
from .context import CellContext

StageFunction = Callable[[CellContext], dict[str, Any]]
STAGES: dict[str, StageFunction] = {}
SEED = 0


def stage(name: str):
    def register(function: StageFunction) -> StageFunction:
        STAGES[name] = function
        return function
    return register


@stage("analyze")
def analyze(context: CellContext) -> dict[str, Any]:
    from ..report.analysis import analyze_graph

    analysis = analyze_graph(context.float_graph())
    note_analysis(analysis)
    return {"macc": analysis.total_macc, "params": analysis.params, "weights_bytes": analysis.weights_bytes,
            "peak_live_bytes": analysis.peak_live_bytes, "nodes": analysis.node_count}


def _calibration(context: CellContext, graph):
    from ..pipeline import calibration_samples, validation_samples

    settings = context.settings("data")
    count = settings["calibration_samples"]
    if "calibration" not in context.paths:
        current_run().warn(f"calibrated on {count} random input(s) in [{settings['value_range'][0]:g}, "
                           f"{settings['value_range'][1]:g}): memory and latency are the model's, accuracy is not")
        low, high = settings["value_range"]
        samples = validation_samples(graph, graph, data=None, count=count, seed=SEED, value_range=(low, high))
        return [{name: array[index] for name, array in samples.arrays.items()} for index in range(samples.count)]
    return calibration_samples(graph, context.paths["calibration"], count)


@stage("quantize")
def quantize(context: CellContext) -> dict[str, Any]:
    from ..pipeline import quantize as quantize_graph
    from ..quantize import QuantizationConfig

    graph = context.float_graph()
    if context.quantization == "as-is" or precision(graph) != "float":
        current_run().warn(f"quantize: {context.request['model']} is deployed as it is "
                           f"({precision(graph)} model, quantization {context.quantization})")
        return {"quantized": False}
    calibration = _calibration(context, graph)
    config = QuantizationConfig(activations="int16" if context.quantization == "int16" else "int8",
                                auto_mixed=context.quantization == "mixed", progress=False,
                                int8_io=context.settings("quantize").get("io") == "int8",
                                evaluation_samples=min(16, len(calibration)))
    outcome = quantize_graph(graph, calibration, config)
    note_quantization(outcome.report)
    context.cache["quantized"] = outcome.graph
    report = outcome.report
    return {"quantized": True, "output_cosine": report.output_cosine, "output_sqnr_db": report.output_sqnr_db,
            "int16_nodes": len(report.int16_nodes), "float_nodes": len(report.float_nodes)}


def _validation_data(context: CellContext, float_graph, quantized):
    from ..pipeline import validation_labels, validation_samples

    samples = validation_samples(float_graph, quantized, data=context.paths.get("validation"),
                                 count=context.settings("data")["samples"], seed=SEED)
    labels = None
    if "labels" in context.paths:
        labels = validation_labels(context.paths["labels"], float_graph, samples.count)
    return samples, labels


@stage("validate")
def validate(context: CellContext) -> dict[str, Any]:
    from ..pipeline import Worst, comparable
    from ..pipeline import validate as validate_pair

    if "quantized" not in context.cache:
        return {}        # nothing was quantized: no float / quantized pair to compare
    float_graph = context.float_graph()
    quantized = comparable(float_graph, context.graph())
    samples, labels = _validation_data(context, float_graph, quantized)
    result = validate_pair(float_graph, quantized, samples, labels=labels)
    note_validation(result)
    worst = Worst.of(result)
    return {"cosine": worst.cosine, "snr_db": worst.snr_db, "top1": worst.top1_agreement,
            "accuracy": worst.quantized_accuracy, "passed": result.passed}


@stage("plan")
def plan(context: CellContext) -> dict[str, Any]:
    from ..pipeline import memory_use

    deployment = context.deployment()
    note_deployment(deployment)
    use = memory_use(deployment)
    return {"arena_bytes": deployment.plan.arena_bytes, "on_chip_bytes": use["sram"], "external_bytes": use["psram"],
            "flash_bytes": use["flash"], "fits": deployment.ledger.fits,
            "overflow_bytes": sum(region.overflow for region in deployment.ledger.regions)}


@stage("estimate")
def estimate(context: CellContext) -> dict[str, Any]:
    from ..estimate import estimate as estimate_deployment

    result = estimate_deployment(context.deployment())
    unknown = [layer.node for layer in result.layers if not layer.known]
    metrics: dict[str, Any] = {"latency_complete": result.complete, "latency_known_ms": result.latency_ms,
                               "unknown_layers": len(unknown), "energy_uj": result.energy_uj,
                               "npu_share": result.device_share().get("npu")}
    if result.complete:
        metrics["latency_ms"] = result.latency_ms
        current_run().payload_section("latency", {"total_ms": float(result.latency_ms), "layers": [
            {"name": layer.node, "ms": layer.time_us / 1000.0} for layer in result.layers]})
    else:
        current_run().warn(f"no latency: the estimate has {len(unknown)} layer(s) without figures "
                           f"({', '.join(unknown[:3])})")
    return metrics


def _locked(options) -> frozenset[str]:
    """The option fields the cell sets (anything but the defaults): the search keeps them."""
    from ..options import DeploymentOptions

    defaults = DeploymentOptions()
    return frozenset(name for name in vars(defaults) if getattr(options, name) != getattr(defaults, name))


@stage("search")
def search(context: CellContext) -> dict[str, Any]:
    from ..search import SearchRequest, run_search

    settings = context.settings("search")
    request = SearchRequest(options=context.options, locked=_locked(context.options) - {"target"},
                            objective=context.request["objective"], budget=settings["budget"],
                            time_limit=settings["time"], jobs=1, critical_limit=False, fixes=False)
    result = run_search(context.graph(), request)
    current_run().payload_section("trials", [_trial_row(trial) for trial in result.trials])
    metrics: dict[str, Any] = {"search_trials": len(result.trials), "search_found": result.found}
    if result.best is not None:
        best = result.best.metrics
        metrics.update(search_on_chip_bytes=best.on_chip_bytes, search_flash_bytes=best.flash_bytes,
                       search_latency_ms=None if best.latency_us is None else best.latency_us / 1000.0)
        best_options = result.best_options()
        assert best_options is not None  # result.best is set
        current_run().payload_section("search", {"best_trial": result.best.index,
                                                 "best_options": best_options.to_dict()})
    return metrics


def _trial_row(trial) -> dict[str, Any]:
    metrics = trial.metrics
    return {"trial": trial.index, "status": trial.status, **{k: v for k, v in trial.config.items() if v is not None},
            "latency_ms": None if metrics is None or metrics.latency_us is None else metrics.latency_us / 1000.0,
            "on_chip_bytes": None if metrics is None else metrics.on_chip_bytes}


@stage("generate")
def generate(context: CellContext) -> dict[str, Any]:
    from ..pipeline import generate as generate_project

    files = generate_project(context.deployment()).files
    note_generation(files)
    return {"files": len(files), "source_bytes": sum(len(text.encode("utf-8")) for text in files.values())}


@stage("qemu")
def qemu(context: CellContext) -> dict[str, Any]:
    from ..pipeline import INSTALL_HINT, integer_feeds, missing_tools, qemu_engine, verify

    missing = missing_tools()
    if missing:
        raise UnsupportedError(f"qemu stage: {', '.join(missing)} not found; {INSTALL_HINT}")
    deployment = context.deployment()
    check = verify(deployment, integer_feeds(deployment, 1, SEED + 1), qemu_engine(deployment.target))
    if not check.bit_exact:
        current_run().warn(check.describe())
    instructions = sum(check.instructions) / len(check.instructions) if check.instructions else None
    return {"bit_exact": check.bit_exact, "instructions": instructions}


def check_metrics(name: str, values: Any) -> dict[str, float | None]:
    """A plugin's result as metrics: a table of names to numbers, booleans or None."""
    if not isinstance(values, dict) or not all(isinstance(key, str) for key in values):
        raise UnsupportedError(f"stage {name} returned {type(values).__name__}; a stage returns a dict of "
                               "metric name -> number")
    checked = {}
    for key, value in values.items():
        if value is not None and (isinstance(value, str) or not isinstance(value, (int, float, bool))
                                  or (isinstance(value, float) and math.isnan(value))):
            raise UnsupportedError(f"stage {name}: metric {key!r} = {value!r} is not a number")
        checked[key] = value
    return checked
