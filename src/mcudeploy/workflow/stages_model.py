"""The stages on the model: analyze, lint, feasibility, quantize, validate.

Each is ``stage(context) -> StageResult``: it translates the project's sections into typed
inputs, computes with the library (the same functions ``mcudeploy analyze / lint / plan /
quantize / validate`` call: :mod:`mcudeploy.pipeline` for quantize and validate), records its figures and
payload in the current run (:mod:`mcudeploy.runs.capture`), and returns what the later stages
and the report need as plain data. A problem is raised as the library raises it (an
:class:`~mcudeploy.errors.McuDeployError` with its exit code); the runner records it.

* analyze: SHA-256, model version, input resolution, MACC, parameters, precision;
* lint: findings on the target; stops at ``[lint] fail_on`` (default never);
* feasibility: the model planned at minimal options (:func:`.ladder.minimal_options`): the
  pipeline takes it, and how large its arena and weights are in float (a float model that
  does not fit is a warning: int8 activations and weights take a quarter);
* quantize: post-training quantization (skipped for a model that is quantized already); the
  ONNX QDQ file it writes is read back, and a file that does not load as the same integer
  graph is a warning (a resumed deploy would run the file's graph);
* validate: float vs quantized on the validation data (or random inputs) against the
  thresholds; a FAIL stops the deploy (exit 9) naming the first layer where the error jumps.
"""
from __future__ import annotations

import logging
from pathlib import Path

from ..driver import deploy, deployable_graph, load_graph
from ..errors import UsageError, ValidationFailed
from ..exporters.onnx_qdq import to_onnx_model
from ..ir import Graph, float_nodes, precision
from ..lint import lint_deployment
from ..pipeline import (
    Worst,
    calibration_samples,
    comparable,
    failure_message,
    memory_use,
    validation_labels,
)
from ..pipeline import (
    quantize as quantize_graph,
)
from ..pipeline import (
    validate as validate_pair,
)
from ..pipeline import validation_samples as pipeline_samples
from ..progress import progress_bar
from ..quantize.calibration import ImagePreprocessing
from ..quantize.quantizer import QuantizationConfig
from ..quantize.report import to_json as quantization_json
from ..report.analysis import analyze_graph
from ..runs.capture import note_analysis, note_deployment, note_lint, note_quantization, note_validation
from ..runs.current import current_run
from ..runs.records import sha256_of_file
from ..validate.thresholds import Thresholds
from .context import DeployContext
from .ladder import minimal_options
from .records import SKIPPED, StageFailed, StageResult

log = logging.getLogger(__name__)
VALIDATION_SEED = 0

# samples of the per-layer comparison that feeds the report's error plot when validation passes
# (a failed validation compares every sample layer by layer, to name the jump)
PER_LAYER_SAMPLES = 4


def _shape_text(shape) -> str:
    return "x".join(str(d) for d in shape) or "scalar"


def analyze(context: DeployContext) -> StageResult:
    graph = context.float_graph()
    analysis = analyze_graph(graph)
    note_analysis(analysis)
    version = context.project.section("project")["version"] or analysis.sha256[:12]
    resolution = " ".join(_shape_text(t.shape) for t in analysis.inputs)
    kind = precision(graph)
    details = {"sha256": analysis.sha256, "version": version, "format": analysis.format, "precision": kind,
               "input_resolution": resolution,
               "inputs": [f"{t.name} {t.dtype} [{', '.join(map(str, t.shape))}]" for t in analysis.inputs],
               "outputs": [f"{t.name} {t.dtype} [{', '.join(map(str, t.shape))}]" for t in analysis.outputs]}
    return StageResult("analyze", summary=f"{analysis.format} {kind} model, input {resolution}, "
                       f"{analysis.total_macc:,} MACC, {analysis.params:,} parameters",
                       figures={"macc": analysis.total_macc, "params": analysis.params,
                                "weights_bytes": analysis.weights_bytes}, details=details)


def lint(context: DeployContext) -> StageResult:
    if context.options.target is None:
        return StageResult("lint", SKIPPED, reason="no target ([deployment.target] name): lint checks a "
                           "model against a target")
    source = context.float_graph()
    report = lint_deployment(deploy(source, context.options), source)
    note_lint(report)
    counts = {severity: report.count(severity) for severity in ("error", "warning", "info")}
    summary = ", ".join(f"{count} {severity}(s)" for severity, count in counts.items())
    fail_on = context.project.section("lint")["fail_on"]
    if report.fails(fail_on):
        first = next(f for f in report.findings if f.rank <= ("error", "warning", "info").index(fail_on))
        raise StageFailed(f"lint: {summary}; [lint] fail_on = {fail_on!r} stops here: {first.rule} at "
                          f"{first.node or 'the model'}: {first.message}")
    if report.target.npu is not None:
        summary += f"; NPU offload {report.mapping.macc_rate:.0%} of MACC (float model)"
    return StageResult("lint", summary=summary, details={"findings": counts})


def feasibility(context: DeployContext) -> StageResult:
    options = minimal_options(context.options)
    deployment = deploy(context.float_graph(), options)
    note_deployment(deployment)
    plan, ledger = deployment.plan, deployment.ledger
    flash = memory_use(deployment)["flash"]
    verdict = "fits" if ledger.fits else "does NOT fit"
    summary = (f"{deployment.precision} model at minimal options (file order, no reuse, reference kernels): "
               f"arena {plan.arena_bytes:,} B, flash {flash:,} B: {verdict}")
    if not ledger.fits:
        hint = "; quantization to int8 divides activations and weights by 4" if deployment.precision == "float" else ""
        current_run().warn(f"the {deployment.precision} model does not fit at minimal options ({ledger.verdict()})"
                           + hint)
    return StageResult("feasibility", summary=summary,
                       figures={"arena_bytes": plan.arena_bytes, "flash_bytes": flash, "fits": ledger.fits},
                       details={"verdict": ledger.verdict(), "nodes": len(deployment.graph.nodes)})


def _calibration_source(context: DeployContext, graph):
    settings = context.project.section("calibration")
    data = settings["data"]
    if data is None:
        raise UsageError(f"{context.project.path}: [calibration] data is required to quantize the float model "
                         f"{context.project.model.name}: give calibration inputs (.npy / .npz / an image folder)")
    if not settings["samples"] or Path(data).is_dir():
        return data
    return calibration_samples(graph, data, settings["samples"])


def _round_trip(quantized, path: Path) -> tuple[Graph, dict[str, str]]:
    """The graph the later stages deploy and the precisions of the quantized graph as deployed
    and of the file read back. The file's graph when both agree: what a resumed deploy
    (``--from`` a later stage) and every command given the file (``generate``, ``validate``)
    read, so that all of them deploy the same layers; else the graph in memory, with a warning
    (the file does not load as the integer graph quantization made)."""
    in_memory = precision(deployable_graph(quantized.copy()))
    loaded = load_graph(path)
    reloaded = precision(deployable_graph(loaded.copy()))
    if reloaded == in_memory:
        return loaded, {"graph_precision": in_memory, "file_precision": reloaded}
    current_run().warn(f"{path.name} loads back as a {reloaded} model (float: "
                       f"{', '.join(float_nodes(deployable_graph(loaded))[:4])}), the quantizer made an {in_memory} "
                       "one: the ONNX QDQ export loses those nodes' integer form. This deploy goes on with the "
                       "quantized graph in memory; a deploy --from a later stage cannot use the file")
    return quantized, {"graph_precision": in_memory, "file_precision": reloaded}


def quantize(context: DeployContext) -> StageResult:
    if context.model_is_quantized():
        return StageResult("quantize", SKIPPED, reason=f"{context.project.model.name} is quantized already "
                           f"({precision(context.float_graph())}): nothing to quantize",
                           details={"type": precision(context.float_graph())})
    settings = context.project.section("calibration")
    graph = context.float_graph()
    config = QuantizationConfig(observer=settings["observer"], weights=settings["weights"],
                                activations=settings["activations"], progress=context.progress)
    preprocessing = ImagePreprocessing(settings["image_scale"], tuple(settings["mean"]), tuple(settings["std"]),
                                       settings["channel_order"], settings["layout"])
    outcome = quantize_graph(graph, _calibration_source(context, graph), config, preprocessing=preprocessing,
                             preprocess=context.project.preprocess())
    report = outcome.report
    note_quantization(report)
    paths = context.paths
    paths.write(paths.quantized, to_onnx_model(outcome.graph).SerializeToString())
    paths.write(paths.quantization_report, quantization_json(report))
    context.cache["quantized"], round_trip = _round_trip(outcome.graph, paths.quantized)
    kind = "int16x8" if settings["activations"] == "int16" else "int8"
    kind += f", {settings['weights']} weights" + (f", {len(report.float_nodes)} float node(s)"
                                                  if report.float_nodes else "")
    return StageResult("quantize", summary=f"{kind}, observer {settings['observer']}, {report.samples} calibration "
                       f"samples: output cosine {report.output_cosine:.4f}, SQNR {report.output_sqnr_db:.1f} dB",
                       figures={"output_cosine": report.output_cosine, "output_sqnr_db": report.output_sqnr_db,
                                "samples": report.samples},
                       details={"type": kind, "quantized": context.relative(paths.quantized),
                                "quantized_sha256": sha256_of_file(paths.quantized), **round_trip},
                       artefacts=[context.relative(paths.quantized), context.relative(paths.quantization_report)])


def validation_samples(context: DeployContext, float_graph, quantized_graph):
    """The validation samples (the data's first N, or N random inputs over the quantized
    input's range) and labels."""
    settings = context.project.section("validation")
    count, data = settings["samples"], settings["data"]
    samples = pipeline_samples(float_graph, quantized_graph, data=None if data is None else Path(data), count=None
                               if data is not None else count, seed=VALIDATION_SEED)
    labels = None
    if settings["labels"] is not None:
        labels = validation_labels(settings["labels"], float_graph, samples.count)[:count]
    return samples.head(count), labels


def validate(context: DeployContext) -> StageResult:
    if context.model_is_quantized():
        return StageResult("validate", SKIPPED, reason="the model is quantized already: there is no float model "
                           "to compare it with (the generated code is still checked bit-exactly: verify)")
    settings = context.project.section("validation")
    float_graph = context.float_graph()
    quantized = comparable(float_graph, context.quantized_graph())
    samples, labels = validation_samples(context, float_graph, quantized)
    thresholds = Thresholds(settings["cosine_min"], settings["top1_min"], settings["top5_min"],
                            settings["accuracy_drop_max"])
    with progress_bar(f"validating on {samples.count} samples", None, enabled=context.progress):
        result = validate_pair(float_graph, quantized, samples, labels=labels, thresholds=thresholds, explain=True,
                               layer_samples=PER_LAYER_SAMPLES)
    note_validation(result)
    worst = Worst.of(result)
    summary = (f"{'PASS' if result.passed else 'FAIL'} on {result.samples} samples ({samples.source}): cosine "
               f"{worst.cosine:.4f}" + (f", top-1 agreement float vs int8 {worst.top1_agreement:.1%}"
                                        if worst.top1_agreement is not None else "")
               + (f", accuracy {worst.quantized_accuracy:.1%} (float {worst.float_accuracy:.1%})"
                  if worst.quantized_accuracy is not None else ""))
    figures = {"cosine": worst.cosine, "top1": worst.top1_agreement}
    details = {"cosine": worst.cosine, "top1": worst.top1_agreement, "source": samples.source,
               "samples": result.samples, "accuracy": worst.quantized_accuracy}
    if not result.passed:
        raise ValidationFailed(failure_message(result, explained=True), figures=figures, details=details)
    return StageResult("validate", summary=summary, figures=figures, details=details)

