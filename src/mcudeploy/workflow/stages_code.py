"""The stages on the deployment: search, generate, verify.

* search: every step of the optimisation ladder (:mod:`.ladder`) is planned
  (:func:`mcudeploy.driver.deploy`) and, with a target, estimated (:mod:`mcudeploy.estimate`,
  when importable); the last step (the project's options) is the deployment, the step before
  it that fits is the fallback. The options are written as ``--config`` files:
  ``<output>/deployment.toml`` and ``<output>/fallback.toml``. When the project's options do
  not fit, the stage fails (exit 8) naming the ledger's verdict and the fallback it kept.
* generate: the C project of the deployment in ``<output>/firmware`` (with test vectors
  from the validation data, and the TrustZone files with ``[generate] trustzone``).
* verify: the generated code run on the host and on the QEMU board of the target's core
  (``qemu``: a core whose ``Core.arch`` is Armv8-M, M23 / M33 / M35P / M52 / M55 / M85, on
  ``qemu-m55`` = mps3-an547; the others on ``qemu-m4`` = mps2-an386:
  :func:`mcudeploy.validate.qemu.qemu_engine`), every output byte compared with the integer
  reference; on an M55-class board with ``[generate] trustzone`` also the TrustZone images
  (:mod:`mcudeploy.validate.trustzone`). A missing cross toolchain skips QEMU with the reason
  recorded; a mismatch stops the deploy (exit 9).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..codegen import ProjectOptions
from ..driver import deploy
from ..errors import ValidationFailed
from ..options import load_options, options_toml
from ..pipeline import (
    INSTALL_HINT,
    comparable,
    estimated,
    integer_feeds,
    memory_use,
    missing_tools,
    qemu_engine,
    test_vectors,
)
from ..pipeline import generate as generate_project
from ..pipeline import (
    verify as verify_code,
)
from ..progress import progress_bar
from ..runs.capture import note_deployment, note_generation
from ..runs.current import current_run
from ..validate.c_runner import (
    CRunResult,
    compare_with_reference,
    generate_for_run,
    read_outputs,
    work_folder,
    write_samples,
)
from ..validate.qemu import board_of, build_board, instructions_from, run_elf
from .context import DeployContext
from .ladder import Step, ladder, search_step
from .records import SKIPPED, StageResult
from .stages_model import validation_samples

if TYPE_CHECKING:
    from ..deployment import Deployment
    from ..estimate.records import Estimate
    from ..targets import Target

CODE_SEED = 1


def _step_row(step: Step, deployment: Deployment) -> tuple[dict, Estimate | None]:
    flash = memory_use(deployment)["flash"]
    estimate, note = estimated(deployment)
    return ({"step": step.name, "raises": step.raises, "arena_bytes": deployment.plan.arena_bytes,
             "flash_bytes": flash, "fits": deployment.fits,
             "latency_ms": float(estimate.latency_ms) if estimate is not None else None, "note": note}, estimate)


def _steps(context: DeployContext) -> list[Step]:
    steps = ladder(context.options)
    searched = search_step(context.quantized_graph(), context.options, context.project.section("search"),
                           context.project.locked_options())
    return steps + ([searched] if searched is not None else [])


def _plan_steps(context: DeployContext) -> tuple[list[Step], list[dict], Deployment]:
    """Every step planned and estimated: the steps, their rows, the last step's deployment."""
    graph, steps = context.quantized_graph(), _steps(context)
    rows = []
    for step in steps:
        deployment = deploy(graph, step.options)
        row, estimate = _step_row(step, deployment)
        rows.append(row)
    if estimate is not None:   # the chosen step's breakdown, for the report's latency section
        current_run().payload_section("latency", {"total_ms": float(estimate.latency_ms), "layers": [
            {"name": layer.node, "ms": layer.time_us / 1000.0} for layer in estimate.layers]})
    return steps, rows, deployment


def _keep_fallback(context: DeployContext, steps: list[Step], rows: list[dict]) -> dict | None:
    """The last step before the chosen one that fits, written as ``fallback.toml``."""
    index = next((i for i in range(len(rows) - 2, -1, -1) if rows[i]["fits"]), None)
    if index is None:
        return None
    path = context.paths.fallback_config
    context.paths.write(path, options_toml(steps[index].options, header=f"fallback of {context.project.name}: "
                        f"step '{rows[index]['step']}' ({rows[index]['raises']})"))
    return {"step": rows[index]["step"], "config": context.relative(path)}


def search(context: DeployContext) -> StageResult:
    steps, rows, chosen = _plan_steps(context)
    paths, last = context.paths, rows[-1]
    fallback = context.cache["fallback"] = _keep_fallback(context, steps, rows)
    note_deployment(chosen)
    current_run().payload_section("trials", [{"trial": index, **row} for index, row in enumerate(rows)])
    current_run().figures({"latency_ms": last["latency_ms"], "steps": len(rows)})
    npu = chosen.mapping is not None and chosen.target is not None and chosen.target.npu is not None
    details = {"steps": rows, "chosen": last["step"], "latency_ms": last["latency_ms"], "latency_note": last["note"],
               "fallback": fallback, "offload_macc": chosen.mapping.macc_rate if npu and chosen.mapping is not None else None}
    kept = f"; fallback kept: step '{fallback['step']}' fits ({fallback['config']})" if fallback else "; no step fits"
    chosen.require_fit(f"step '{last['step']}'" + kept)
    paths.write(paths.deployment_config, options_toml(chosen.options, header=f"deployment options of "
                f"{context.project.name} (mcudeploy deploy, step '{last['step']}')"))
    context.cache["deployment"] = chosen
    latency = f"{last['latency_ms']:.3g} ms estimated" if last["latency_ms"] is not None else last["note"]
    return StageResult("search", summary=f"{len(rows)} step(s), chosen '{last['step']}': arena "
                       f"{chosen.plan.arena_bytes:,} B in {chosen.plan.placement.arena_region}, flash "
                       f"{last['flash_bytes']:,} B, {latency}" + (f"; fallback '{fallback['step']}'" if fallback else ""),
                       figures={"arena_bytes": chosen.plan.arena_bytes, "flash_bytes": last["flash_bytes"]},
                       details=details, artefacts=[context.relative(paths.deployment_config)]
                       + ([fallback["config"]] if fallback else []))


def chosen_deployment(context: DeployContext):
    """The search stage's deployment (rebuilt from ``deployment.toml`` after a resume)."""
    if "deployment" not in context.cache:
        options = load_options(context.paths.deployment_config)
        context.cache["deployment"] = deploy(context.quantized_graph(), options)
    return context.cache["deployment"]


def code_feeds(context: DeployContext, deployment: Deployment, count: int) -> dict[str, np.ndarray]:
    """Integer feeds for the generated code: the validation samples quantized, or random."""
    if context.model_is_quantized() or context.project.section("validation")["data"] is None:
        return integer_feeds(deployment, count, CODE_SEED)
    float_graph = context.float_graph()
    samples, _ = validation_samples(context, float_graph, comparable(float_graph, context.quantized_graph()))
    return integer_feeds(deployment, count, CODE_SEED, float_graph=float_graph, samples=samples)


def generate(context: DeployContext) -> StageResult:
    deployment = chosen_deployment(context)
    settings = context.project.section("generate")
    vectors = None
    if settings["test_vectors"]:
        feeds = code_feeds(context, deployment, settings["test_vectors"])
        vectors = test_vectors(deployment.graph, feeds, "validation samples")
    written = generate_project(deployment, ProjectOptions(test_vectors=vectors, trustzone=settings["trustzone"]),
                               preprocess=context.project.preprocess(), folder=context.paths.firmware).written
    note_generation(written)
    folder = context.relative(context.paths.firmware)
    return StageResult("generate", summary=f"{len(written)} files in {folder}"
                       + (f", {len(next(iter(vectors.inputs.values())))} test vector(s)" if vectors else "")
                       + (", TrustZone images" if settings["trustzone"] else ""),
                       figures={"files": len(written)}, details={"folder": folder}, artefacts=[folder])


def engines(context: DeployContext, target: Target) -> list[str]:
    names = [qemu_engine(target) if name == "qemu" else name for name in context.project.section("validation")["code"]]
    return list(dict.fromkeys(names))


def _on_board(deployment: Deployment, feeds: dict[str, np.ndarray], engine: str, advance) -> CRunResult:
    """Build once for the board of ``engine``, run every sample in its own QEMU (a bar step each)."""
    board, graph = board_of(engine), deployment.graph
    count = next(iter(feeds.values())).shape[0]
    with work_folder() as folder:
        elf = build_board(generate_for_run(deployment, folder / "project"), board.name)
        advance()
        outputs, instructions = [], []
        for index in range(count):
            write_samples(graph, {name: array[index:index + 1] for name, array in feeds.items()}, folder / "inputs.bin")
            console = run_elf(elf, board.name, folder, 1)
            outputs.append(read_outputs(graph, folder / "outputs.bin", 1))
            instructions += instructions_from(console, board.ns_per_tick)
            advance()
    joined = {value.name: np.concatenate([part[value.name] for part in outputs]) for value in graph.outputs}
    return CRunResult(joined, instructions)


def _check(context: DeployContext, deployment: Deployment, feeds, engine: str):
    count = next(iter(feeds.values())).shape[0]
    if engine == "host":
        with progress_bar("generated code on the host", None, enabled=context.progress):
            return verify_code(deployment, feeds, "host")
    with progress_bar(f"generated code on {engine}", count + 1, enabled=context.progress) as advance:
        return compare_with_reference(deployment, feeds, engine, _on_board(deployment, feeds, engine, advance))


def _trustzone(context: DeployContext, deployment: Deployment, feeds) -> str:
    from ..validate.trustzone import check_trustzone

    with progress_bar("TrustZone images on mps3-an547", None, enabled=context.progress):
        check = check_trustzone(deployment, feeds)
    if not check.passed:
        raise ValidationFailed(check.describe())
    return check.describe()


def verify(context: DeployContext) -> StageResult:
    deployment = chosen_deployment(context)
    wanted = engines(context, deployment.target)
    if not wanted:
        return StageResult("verify", SKIPPED, reason="[validation] code = []: no generated-code check asked for")
    feeds = code_feeds(context, deployment, context.project.section("validation")["code_samples"])
    lines: list[str] = []
    figures: dict[str, float | None] = {}
    skipped: list[str] = []
    missing = missing_tools()
    for engine in wanted:
        if engine != "host" and missing:
            skipped.append(f"{engine} skipped: {', '.join(missing)} not found; {INSTALL_HINT}")
            current_run().warn(skipped[-1])
            continue
        check = _check(context, deployment, feeds, engine)
        if not check.bit_exact:
            raise ValidationFailed(check.describe())
        lines.append(f"{engine} bit-exact ({check.samples} samples)")
        figures[f"bit_exact_{engine.replace('-', '_')}"] = 1
        if check.instructions:
            figures["instructions"] = int(np.mean(check.instructions))
        if engine == "qemu-m55" and context.project.section("generate")["trustzone"]:
            lines.append(_trustzone(context, deployment, feeds))
    summary = "; ".join(lines + skipped)
    if not lines:
        return StageResult("verify", SKIPPED, reason=summary, details={"skipped": skipped})
    return StageResult("verify", summary=summary, figures=figures,
                       details={"engines": wanted, "skipped": skipped, "instructions": figures.get("instructions")})
