"""What each command records about its result: figures and payload sections.

One call per command, after it has computed its result::

    note_analysis(analysis)                  # analyze
    note_lint(report)                        # lint
    note_deployment(deployment)              # plan MODEL, generate (the driver's Deployment record)
    note_validation(result)                  # validate
    note_quantization(report)                # quantize
    note_generation(files_written)           # generate (after note_deployment)

Each does nothing outside a recorded run (:func:`.current.current_run`), and never
raises: a recording problem is logged (once per process) and the command goes on.

Figures (names are stable: ``runs diff`` and ``runs export`` compare them):

    analyze   macc, params, weights_bytes, activation_bytes, peak_live_bytes, io_bytes, nodes
    lint      findings_error, findings_warning, findings_info, offload_nodes, offload_macc
    plan      arena_bytes, no_reuse_bound_bytes, file_order_bound_bytes, reuse_rate, weights_bytes,
              flash_bytes (used in flash regions), ram_bytes (used elsewhere), overflow_bytes, fits,
              nodes, offload_nodes, offload_macc (NPU targets)    (note_deployment)
    validate  cosine, snr_db, rmse, max_abs_error (worst output), top1, top5, accuracy,
              accuracy_drop, passed, samples, first_jump_index
    quantize  output_sqnr_db, output_cosine, float_nodes, int16_nodes, samples
    generate  the plan's figures (note_deployment), files
"""
from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any, Callable

from .current import current_run
from .payload import (
    PAYLOAD_SCHEMA,
    analysis_sections,
    clean,
    deployment_sections,
    graph_layer_rows,
    mapping_sections,
    merge_layers,
    validation_sections,
)

if TYPE_CHECKING:
    from ..deployment import Deployment

log = logging.getLogger("mcudeploy.runs")
_failure_logged = False


def _never_fails(function: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(function)
    def guarded(*args, **kwargs) -> None:
        global _failure_logged
        run = current_run()
        if not run.active:
            return
        try:
            function(run, *args, **kwargs)
        except Exception as error:    # a recording bug must not fail the user's command
            if not _failure_logged:
                log.warning("run record incomplete (%s: %s)", type(error).__name__, error)
                _failure_logged = True
    return guarded


def _payload(run) -> dict[str, Any]:
    if run.record.payload is None:
        run.payload_section("schema", PAYLOAD_SCHEMA)
    return run.record.payload


def _add_section(run, name: str, section: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    payload = _payload(run)
    payload[name] = section
    merge_layers(payload, rows)


@_never_fails
def note_analysis(run, analysis) -> None:
    run.figures({"macc": analysis.total_macc, "params": analysis.params,
                 "weights_bytes": analysis.weights_bytes, "activation_bytes": analysis.activation_bytes,
                 "peak_live_bytes": analysis.peak_live_bytes, "io_bytes": analysis.io_bytes,
                 "nodes": analysis.node_count})
    _add_section(run, "analysis", *analysis_sections(analysis))


@_never_fails
def note_lint(run, report) -> None:
    for severity in ("error", "warning", "info"):
        run.figure(f"findings_{severity}", report.count(severity))
    _note_mapping(run, report.mapping)
    _payload(run)["lint"] = {"findings": clean(report.findings)}


def _note_mapping(run, mapping) -> None:
    run.figures({"offload_nodes": mapping.node_rate, "offload_macc": mapping.macc_rate})
    _add_section(run, "mapping", *mapping_sections(mapping))


@_never_fails
def note_deployment(run, deployment: Deployment) -> None:
    ledger, plan, graph = deployment.ledger, deployment.plan, deployment.graph
    flash = sum(r.used for r in ledger.regions if r.kind == "flash")
    run.figures({"arena_bytes": plan.arena_bytes, "no_reuse_bound_bytes": plan.no_reuse_bound_bytes,
                 "file_order_bound_bytes": plan.file_order_bound_bytes, "reuse_rate": round(plan.reuse_rate, 6),
                 "weights_bytes": sum(v.nbytes for v in graph.constants()), "flash_bytes": flash,
                 "ram_bytes": sum(r.used for r in ledger.regions) - flash,
                 "overflow_bytes": sum(r.overflow for r in ledger.regions), "fits": ledger.fits,
                 "nodes": len(graph.nodes)})
    payload = _payload(run)
    merge_layers(payload, graph_layer_rows(graph))
    _add_section(run, "plan", *deployment_sections(deployment))
    if deployment.mapping is not None:
        if deployment.target is not None and deployment.target.npu is not None:
            _note_mapping(run, deployment.mapping)
        else:
            merge_layers(payload, mapping_sections(deployment.mapping)[1])
    for text in deployment.warnings:
        if text not in run.record.warnings:
            run.warn(text)


@_never_fails
def note_estimate(run, estimate) -> None:
    """The cost model's latency: the figure, the payload's ``latency`` section (what the HTML
    report's latency breakdown draws) and each layer's ``estimated_ms``."""
    known = [layer for layer in estimate.layers if layer.known]
    run.figures({"latency_ms": round(estimate.latency_ms, 6)})
    payload = _payload(run)
    payload["latency"] = {"total_ms": estimate.latency_ms, "runtime": estimate.runtime,
                          "complete": estimate.complete,
                          "layers": [{"name": layer.node, "ms": layer.time_us / 1000} for layer in known]}
    merge_layers(payload, [{"name": layer.node, "estimated_ms": layer.time_us / 1000} for layer in known])


@_never_fails
def note_validation(run, result) -> None:
    worst = lambda name, pick: pick((getattr(m, name) for m in result.metrics  # noqa: E731
                                     if getattr(m, name) is not None), default=None)
    run.figures({"cosine": worst("cosine", min), "snr_db": worst("snr_db", min), "rmse": worst("rmse", max),
                 "max_abs_error": worst("max_abs_error", max), "top1": worst("top1_agreement", min),
                 "top5": worst("top5_agreement", min), "accuracy": worst("quantized_accuracy", min),
                 "accuracy_drop": worst("accuracy_drop", max), "passed": result.passed,
                 "samples": result.samples})
    _add_section(run, "validation", *validation_sections(result))
    if result.layers is not None and result.layers.first_jump is not None:
        names = [layer.node for layer in result.layers.layers]
        run.figure("first_jump_index", names.index(result.layers.first_jump))


@_never_fails
def note_quantization(run, report) -> None:
    run.figures({"output_sqnr_db": report.output_sqnr_db, "output_cosine": report.output_cosine,
                 "float_nodes": len(report.float_nodes), "int16_nodes": len(report.int16_nodes),
                 "samples": report.samples})
    _payload(run)["quantization"] = clean({key: value for key, value in vars(report).items() if key != "tensors"})


@_never_fails
def note_generation(run, files_written) -> None:
    run.figure("files", len(files_written))
