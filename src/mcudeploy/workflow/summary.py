"""The results-table row of a deploy, and the report stage that records it.

After every conversion the guides ask for one row of a results table; this is that row,
read from the stage results (a stage that did not run leaves its cells ``-``):

=================  ==========================================================================
column             from
=================  ==========================================================================
model version      ``[project] version``, else the model's SHA-256 (12 digits)        analyze
input resolution   every input's shape                                                 analyze
quantization type  int8 / int16x8, weight granularity, float nodes; or as given        quantize
activation memory  the arena bytes of the chosen deployment                            search
flash              bytes used in the flash regions (weights, code constants)           search
latency            the estimator's (:mod:`mcudeploy.estimate`), else "not estimated"   search
NPU utilisation    share of MACC the mapping puts on the NPU; "no NPU" without one     search
top-1 agreement    top-1 agreement float vs quantized (worst output): not accuracy        validate
accuracy           the quantized model's accuracy on the labelled validation data         validate
cosine             cosine similarity float vs quantized (worst output)                  validate
=================  ==========================================================================

The report stage records the row's numbers as its figures (so ``runs diff`` of two deploys'
report runs shows what moved), the row and every stage's status as the ``workflow`` payload
section, and merges the other stages' payload sections (plan, validation, layers, ...) so the
HTML report (:mod:`mcudeploy.report.html`) shows all of them on one page.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..runs.current import current_run
from ..runs.payload import merge_layers
from .context import DeployContext
from .records import OK, STAGES, StageResult

# the payload sections the report takes from each stage's run: the memory plan, mapping and
# layers of the deployment the search stage chose (not the float plan of feasibility)
MERGED_SECTIONS = {"analyze": ("analysis",), "lint": ("lint",), "quantize": ("quantization",),
                   "validate": ("validation",), "search": ("plan", "mapping", "trials", "latency")}
LAYERS_FROM = ("search", "validate")   # the deployed graph's layers, then the per-layer errors


@dataclass(frozen=True)
class ResultsRow:
    model: str
    model_version: str
    model_sha256: str
    input_resolution: str
    quantization: str
    activation_bytes: float | None     # the search stage's figures (a float-valued table)
    flash_bytes: float | None
    latency_ms: float | None
    latency_note: str
    npu_utilisation: float | None
    npu_note: str
    top1: float | None
    cosine: float | None
    accuracy: float | None = None

    def figures(self) -> dict[str, float | None]:
        """The numbers, under the run store's figure names."""
        return {"arena_bytes": self.activation_bytes, "flash_bytes": self.flash_bytes, "latency_ms": self.latency_ms,
                "offload_macc": self.npu_utilisation, "top1": self.top1, "cosine": self.cosine,
                "accuracy": self.accuracy}

    def cells(self) -> dict[str, str]:
        """Column -> text, in the table's order."""
        number = lambda value, unit="": "-" if value is None else f"{value:,}{unit}"  # noqa: E731
        return {"model version": self.model_version, "input resolution": self.input_resolution,
                "quantization type": self.quantization, "activation memory": number(self.activation_bytes, " B"),
                "flash": number(self.flash_bytes, " B"),
                "latency": f"{self.latency_ms:.3g} ms" if self.latency_ms is not None else self.latency_note,
                "NPU utilisation": f"{self.npu_utilisation:.0%}" if self.npu_utilisation is not None else self.npu_note,
                "top-1 agreement": f"{self.top1:.1%}" if self.top1 is not None else _missing(self, "top1"),
                "accuracy": f"{self.accuracy:.1%}" if self.accuracy is not None else _missing(self, "accuracy"),
                "cosine": f"{self.cosine:.4f}" if self.cosine is not None else _missing(self, "cosine")}


def _missing(row: ResultsRow, name: str) -> str:
    """An empty cell's text: why it is empty when validation ran (``cosine`` is there)."""
    if row.cosine is None:
        return "-"
    return {"top1": "n/a (no class output)", "accuracy": "- (no labels)"}.get(name, "-")


def _details(results: dict[str, StageResult], stage: str, failed_too: bool = False) -> dict[str, Any]:
    """A stage's details when it ran OK; ``failed_too``: also when it failed having measured
    them (a validate stage below its thresholds: its cosine and top-1 are the row's answer)."""
    result = results.get(stage)
    if result is None:
        return {}
    return result.details if result.status == OK or failed_too else {}


def results_row(context: DeployContext) -> ResultsRow:
    """The row of the deploy in ``context`` (module docstring)."""
    results = context.results
    analyzed, searched = _details(results, "analyze"), _details(results, "search")
    quantized, validated = results.get("quantize"), _details(results, "validate", failed_too=True)
    kind = quantized.details.get("type", "-") if quantized is not None else "-"
    if quantized is not None and quantized.status != OK and kind != "-":
        kind += " (as given)"
    search = results.get("search")
    has_npu = context.options.target is not None and searched.get("offload_macc") is not None
    return ResultsRow(model=context.project.model.name, model_version=analyzed.get("version", "-"),
                      model_sha256=analyzed.get("sha256", "-"), input_resolution=analyzed.get("input_resolution", "-"),
                      quantization=kind,
                      activation_bytes=search.figures.get("arena_bytes") if search and search.status == OK else None,
                      flash_bytes=search.figures.get("flash_bytes") if search and search.status == OK else None,
                      latency_ms=searched.get("latency_ms"),
                      latency_note=searched.get("latency_note") or ("not estimated" if searched else "-"),
                      npu_utilisation=searched.get("offload_macc") if has_npu else None,
                      npu_note="no NPU on the target" if searched else "-",
                      top1=validated.get("top1"), cosine=validated.get("cosine"), accuracy=validated.get("accuracy"))


def stage_rows(context: DeployContext) -> list[dict[str, Any]]:
    """One entry per stage: status, run, duration, summary or reason, where it came from."""
    rows: list[dict[str, Any]] = []
    for stage in STAGES:
        result = context.results.get(stage)
        if stage == "report":
            rows.append({"stage": stage, "status": OK, "run": None, "seconds": None, "summary": "this page",
                         "from": "this deploy"})
            continue
        if result is None:
            rows.append({"stage": stage, "status": "not run", "run": None, "seconds": None, "summary": ""})
            continue
        text = result.summary if result.status == OK else (result.reason or result.summary)
        rows.append({"stage": stage, "status": result.status, "run": result.run_id,
                     "seconds": round(result.seconds, 2), "summary": text,
                     "from": f"deploy {result.reused_from}" if result.reused_from else "this deploy"})
    return rows


def _merge_payloads(context: DeployContext) -> None:
    run = current_run()
    payloads: dict[str, dict] = {stage: payload or {} for stage, payload in context.cache.get("payloads", {}).items()}
    for stage, sections in MERGED_SECTIONS.items():
        for section in sections:
            if section in payloads.get(stage, {}):
                run.payload_section(section, payloads[stage][section])
    sources = [stage for stage in LAYERS_FROM if payloads.get(stage, {}).get("layers")] or ["analyze"]
    for stage in sources:
        merge_layers(run.record.payload, payloads.get(stage, {}).get("layers", []))


def report(context: DeployContext) -> StageResult:
    row = results_row(context)
    failed = next((r for r in context.results.values() if r.status not in (OK, "skipped")), None)
    run = current_run()
    run.payload_section("workflow", {})   # the payload exists before the other sections merge into it
    _merge_payloads(context)
    run.figures(row.figures())
    workflow = {"project": str(context.project.path), "deploy": context.cache.get("deploy_id"),
                "row": row.cells(), "values": asdict(row), "stages": stage_rows(context),
                "stopped_at": failed.stage if failed else None, "reason": failed.reason if failed else None,
                "fallback": context.cache.get("fallback"), "report": context.relative(context.paths.report)}
    run.payload_section("workflow", workflow)
    cells = row.cells()
    return StageResult("report", summary=f"results-table row and {workflow['report']}",
                       figures={k: v for k, v in row.figures().items() if v is not None},
                       details={"row": cells, "values": asdict(row), "report": workflow["report"]})
