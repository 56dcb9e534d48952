"""The staged deployment as one call: ``mcudeploy deploy`` (issue 13).

    outcome = run_deploy(project, start=None, argv=[], record=True, store_path=None, on_stage=print_line)

Runs :data:`~.records.STAGES` in order, each as one recorded run (:mod:`.stage_runs`), and
saves every result to ``<output>/deploy.json`` as it goes. The first stage that fails stops
the deploy with its reason and exit code; the report stage runs in any case and writes
``<output>/report.html`` (every stage's status, the results-table row, the plan, accuracy
and per-layer sections). The configuration to fall back to is named: the last one that
passed every stage (``<output>/passed.toml``, written when a deploy passes), and the search
stage's fallback step (``<output>/fallback.toml``).

``start`` (``--from STAGE``) resumes: the results of the stages before it come from the
latest deploy of the same project (``deploy.json``, their runs read back from the store when
it has them; each must have passed), and their artefacts from the output folder (the
quantized model is checked against the SHA-256 its stage recorded). Settings that changed
since are named in a warning: the reused stages ran with the old ones. A source model that
changed since (its SHA-256, kept in ``deploy.json``) is refused with one line: every stage
ran on the old model, so only a whole deploy is right (``--from`` never runs stages the user
did not ask for).

Every file goes through the deploy's manifest (:class:`~.context.OutputPaths`): the output
folder is checked before the first stage, and no file of the user's there is replaced.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ..errors import UsageError
from ..report.html import render_html
from ..runs.payload import clean
from ..runs.records import sha256_of_file
from . import stages_code, stages_model, summary
from .context import DeployContext
from .project import Project
from .records import FAILED, OK, STAGES, DeployState, StageResult
from .stage_runs import StageRecorder

log = logging.getLogger(__name__)
STAGE_FUNCTIONS: dict[str, Callable[[DeployContext], StageResult]] = {
    "analyze": stages_model.analyze, "lint": stages_model.lint, "feasibility": stages_model.feasibility,
    "quantize": stages_model.quantize, "validate": stages_model.validate, "search": stages_code.search,
    "generate": stages_code.generate, "verify": stages_code.verify, "report": summary.report}
ON_QUANTIZED_MODEL = ("search", "generate", "verify")   # stages whose run records the quantized model


@dataclass
class DeployOutcome:
    deploy_id: str
    results: dict[str, StageResult]
    report: Path | None
    fallback: str | None              # the configuration to fall back to, named (None: none yet)

    @property
    def failed(self) -> StageResult | None:
        return next((result for result in self.results.values() if result.status == FAILED), None)

    @property
    def exit_code(self) -> int:
        return self.failed.exit_code if self.failed is not None else 0


def check_stage(name: str | None) -> None:
    if name is not None and name not in STAGES:
        raise UsageError(f"--from {name!r}: not a stage; the stages are {', '.join(STAGES)}")


def _model_of(context: DeployContext, stage: str) -> Path:
    quantized = context.paths.quantized
    return quantized if stage in ON_QUANTIZED_MODEL and quantized.is_file() else context.project.model


def _resume(context: DeployContext, recorder: StageRecorder, start: str) -> str:
    """Take the results of the stages before ``start`` from the latest deploy; its id."""
    state = DeployState.read(context.paths.state)
    if state is None or state.project != str(context.project.path):
        raise UsageError(f"--from {start}: no earlier deploy of {context.project.path} in {context.paths.folder} "
                         "(deploy.json); run 'mcudeploy deploy' first")
    _check_source(context, state, start)
    payloads = context.cache.setdefault("payloads", {})
    for stage in STAGES[:STAGES.index(start)]:
        result = state.stages.get(stage)
        if result is None or result.status == FAILED:
            raise UsageError(f"--from {start}: stage {stage} did not pass in deploy {state.deploy_id} "
                             f"({result.reason if result else 'it did not run'}); run 'mcudeploy deploy --from {stage}'")
        stored = recorder.stored(result.run_id)
        if stored is not None and stored.payload and "stage" in stored.payload:
            result = StageResult.from_dict(stored.payload["stage"])
            payloads[stage] = stored.payload
        result.reused_from = result.reused_from or state.deploy_id
        context.results[stage] = result
    current = clean(context.project.config())
    changed = sorted(key for key, value in current.items() if state.config.get(key, value) != value)
    if changed:
        log.warning("--from %s: settings changed since deploy %s, whose earlier stages are reused: %s",
                    start, state.deploy_id, ", ".join(changed))
    context.cache["fallback"] = context.results.get("search", StageResult("search")).details.get("fallback")
    return state.deploy_id


def _check_source(context: DeployContext, state: DeployState, start: str) -> None:
    """:class:`UsageError` when the source model is not the one the reused stages ran on."""
    recorded = state.model_sha256 or state.stages.get("analyze", StageResult("analyze")).details.get("sha256")
    current = context.cache["model_sha256"]
    if recorded and recorded != current:
        raise UsageError(f"--from {start}: the model {context.project.model} changed since deploy {state.deploy_id} "
                         f"(SHA-256 {recorded[:12]}... then, {current[:12]}... now): the stages before {start} ran on "
                         "the old model; run 'mcudeploy deploy' (every stage) for the new one")


def _save(context: DeployContext, deploy_id: str) -> None:
    state = DeployState(deploy_id, str(context.project.path), dict(context.results), context.project.config(),
                        context.cache["model_sha256"])
    context.paths.write(context.paths.state, state.to_json())


def _fallback(context: DeployContext, deploy_id: str, failed: StageResult | None) -> str | None:
    """Keep the configuration that passed (module docstring) and name the one to fall back to."""
    paths = context.paths
    if failed is None and paths.deployment_config.is_file():
        text = paths.deployment_config.read_text(encoding="utf-8")
        paths.write(paths.passed_config, f"# passed every stage in deploy {deploy_id}\n{text}")
        return None
    names = []
    if paths.passed_config.is_file():
        names.append(f"the last configuration that passed every stage: {context.relative(paths.passed_config)}")
    step = context.cache.get("fallback")
    if step:
        names.append(f"the search stage's fallback step '{step['step']}': {step['config']}")
    return "; ".join(names) or None


def run_deploy(project: Project, *, start: str | None = None, argv: Sequence[str] = (), record: bool = True,
               store_path: Path | None = None, tags: dict[str, str] | None = None, progress: bool = True,
               on_stage: Callable[[int, StageResult], None] | None = None) -> DeployOutcome:
    """Run the stages (module docstring); ``on_stage(index, result)`` after each."""
    check_stage(start)
    context = DeployContext(project, progress=progress)
    context.paths.check()                   # before any stage: no user file is in the way
    context.cache["model_sha256"] = sha256_of_file(project.model)
    recorder = StageRecorder(project, argv, store_path=store_path, enabled=record, tags=tags)
    try:
        if start is not None:
            recorder.tags["resumed_from"] = _resume(context, recorder, start)
        first = STAGES.index(start) if start is not None else 0
        for index, stage in enumerate(STAGES[first:-1], start=first):
            result = recorder.run(stage, _stage_call(stage, context), model=_model_of(context, stage))
            context.results[stage] = result
            context.cache.setdefault("payloads", {})[stage] = recorder.records[stage].payload
            assert recorder.deploy_id is not None  # set when the first stage began
            _save(context, recorder.deploy_id)
            if on_stage is not None:
                on_stage(index, result)
            if result.status == FAILED:
                break
        return _finish(context, recorder, on_stage)
    finally:
        recorder.close()


def _stage_call(stage: str, context: DeployContext) -> Callable[[], StageResult]:
    """Stage ``stage`` on ``context``, to call later (looked up in STAGE_FUNCTIONS then)."""
    return lambda: STAGE_FUNCTIONS[stage](context)


def _finish(context: DeployContext, recorder: StageRecorder, on_stage) -> DeployOutcome:
    """The report stage, the HTML page, the configurations kept."""
    context.cache["deploy_id"] = recorder.deploy_id
    failed = next((result for result in context.results.values() if result.status == FAILED), None)
    result = recorder.run("report", lambda: summary.report(context), model=context.project.model)
    context.results["report"] = result
    assert recorder.deploy_id is not None  # set when the report stage began
    report_path = None
    if result.status == OK:
        report_path = context.paths.write(context.paths.report, render_html(recorder.records["report"]))
    _save(context, recorder.deploy_id)
    fallback = _fallback(context, recorder.deploy_id, failed)
    if on_stage is not None:
        on_stage(len(STAGES) - 1, result)
    return DeployOutcome(recorder.deploy_id, dict(context.results), report_path, fallback)

