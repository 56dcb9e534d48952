"""Arena of the default plan vs the reference-kernel plan, per model and core (issue 25).

    python benchmarks/arena_variants_bench.py [--out benchmarks/results/arena_variants.md]

Every full-integer model of ../shared/models (``paths.INT8_MODELS``) and MobileNetV2 0.5 128
quantized here (:func:`mobilenet_v2`; no MNIST model is in ../shared), deployed on a
Cortex-M4 (``mps2-an386``), a Cortex-M7 with DSP (``stm32h743``) and a Cortex-M55 with Helium
(``stm32n6``, mcudeploy's CPU code) three times: ``kernels = reference`` (the portable kernels
everywhere), ``auto`` (the default: every fast variant the core runs while the deployment
fits, the arena cost stated) and ``arena`` (a fast variant only where the plan with it is no
larger than the reference kernels' plan, src/mcudeploy/plan/variant_arena.py). Per deployment: the planned arena and the estimator's
CPU instructions and latency (``mcudeploy.estimate``, the shipped instruction model; an
estimate, not a measurement: benchmarks/estimate_bench.py compares it with QEMU). The second
table lists each node that fell back with the arena its fast variant would have made and the
rule that costs it.
"""
from __future__ import annotations

import argparse
import logging
import os
import platform
import sys
import time
from pathlib import Path

import mcudeploy
from mcudeploy.driver import deploy
from mcudeploy.estimate import estimate
from mcudeploy.options import DeploymentOptions
from paths import INT8_MODELS, RESULTS, SHARED_MODELS, git_commit

log = logging.getLogger("arena_variants_bench")
TARGETS = {"mps2-an386": "Cortex-M4", "stm32h743": "Cortex-M7", "stm32n6": "Cortex-M55"}
PREFERENCES = ("reference", "auto", "arena")


def mobilenet_v2():
    """MobileNetV2 0.5 128 (../shared/models/onnx, float) quantized here with 2 random calibration
    samples: the arena depends on the shapes only, not on the ranges."""
    import numpy as np

    from mcudeploy.driver import load_graph
    from mcudeploy.quantize.quantizer import QuantizationConfig, quantize_model
    graph = load_graph(SHARED_MODELS / "onnx" / "mobilenetv2_0.5_128.onnx")
    rng = np.random.default_rng(0)
    data = [{graph.inputs[0].name: rng.uniform(-1, 1, (1, 3, 128, 128)).astype(np.float32)} for _ in range(2)]
    quantized = quantize_model(graph, data, QuantizationConfig(progress=False)).graph
    quantized.metadata["path"] = "mobilenetv2_0.5_128_int8"
    return quantized


def measure(model, target: str) -> dict:
    """The three deployments of ``model`` (a shared model's path, or a graph) on ``target``:
    arena, instructions, latency, decision."""
    name = Path(model).stem if isinstance(model, str) else str(model.metadata["path"])
    row: dict = {"model": name, "target": target, "core": TARGETS[target]}
    for preference in PREFERENCES:
        source = SHARED_MODELS / model if isinstance(model, str) else model
        deployment = deploy(source, DeploymentOptions(target=target, kernels=preference))
        cost = estimate(deployment)
        row[preference] = {"arena": deployment.plan.arena_bytes, "instructions": cost.cpu_instructions,
                           "latency_ms": cost.latency_ms, "counts": deployment.kernels.counts()}
        row[preference]["decision"] = deployment.kernel_arena
        row[preference]["warnings"] = deployment.warnings
    return row


def _percent(value: float, base: float) -> str:
    return f"{100.0 * (value - base) / base:+.1f} %" if base else "-"


def summary_table(rows: list[dict]) -> list[str]:
    lines = ["| model | core (target) | arena reference | arena default (auto) | default - reference "
             "| arena `--kernels arena` | fell back | instr. reference | instr. default | instr. `arena` "
             "| latency ms reference / default / `arena` |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for row in rows:
        reference, auto, arena = (row[p] for p in PREFERENCES)
        decision = arena["decision"]
        fallbacks = len(decision.fallbacks) if decision is not None else 0
        lines.append(f"| {row['model']} | {row['core']} ({row['target']}) | {reference['arena']} | {auto['arena']} "
                     f"| {auto['arena'] - reference['arena']:+d} | {arena['arena']} | {fallbacks} "
                     f"| {reference['instructions']:,.0f} | {auto['instructions']:,.0f} "
                     f"| {arena['instructions']:,.0f} ({_percent(arena['instructions'], auto['instructions'])}) "
                     f"| {reference['latency_ms']:.3f} / {auto['latency_ms']:.3f} / {arena['latency_ms']:.3f} |")
    return lines


def rule_lines(rows: list[dict]) -> list[str]:
    """The default's decision where it costs arena: the rule that accepted it (plan's own words)."""
    lines = []
    for row in rows:
        auto = row["auto"]
        if auto["arena"] > row["reference"]["arena"] and auto["decision"] is not None:
            lines += [f"- **{row['model']}, {row['core']}**:"]
            lines += [f"  - {line}" for line in auto["decision"].lines()]
        lines += [f"  - note: {warning}" for warning in auto["warnings"] if "kernel" in warning]
    return lines


def fallback_table(rows: list[dict]) -> list[str]:
    lines = ["| model | core | node | fast variant | arena with it (B) | rule |", "|---|---|---|---|---:|---|"]
    for row in rows:
        decision = row["arena"]["decision"]
        for costly in decision.fallbacks if decision is not None else []:
            lines.append(f"| {row['model']} | {row['core']} | `{costly.node}` | {costly.variant} "
                         f"| {costly.arena_with_it if costly.arena_with_it is not None else 'not tried'} "
                         f"| {'; '.join(costly.rules)} |")
    return lines


def render(rows: list[dict], command: str, seconds: float, load: tuple[float, float, float]) -> str:
    never_above = all(row["arena"]["arena"] <= row["reference"]["arena"] for row in rows)
    costs = sum(1 for row in rows if row["auto"]["arena"] > row["reference"]["arena"])
    header = [
        "# Arena of the default plan vs the reference-kernel plan (issue 25)", "",
        f"Command: `{command}` ({seconds:.0f} s). mcudeploy {mcudeploy.__version__} (commit {git_commit()}), Python "
        f"{platform.python_version()}, {platform.machine()}; machine load (1/5/15 min) "
        f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}.", "",
        "`reference`: the portable kernels everywhere; default (`auto`): every fast variant the core runs "
        "while the deployment fits (else the fewest fall back that make it fit, then all); `--kernels arena`: "
        "a fast variant only where the plan with it is no larger than the reference kernels' "
        "(src/mcudeploy/plan/variant_arena.py). Instructions and latency are the estimator's (shipped "
        "instruction model), not measurements.", "",
        f"`--kernels arena` <= reference-kernel arena on every row: **{'yes' if never_above else 'NO'}**. "
        f"The default costs arena over the reference kernels on {costs} of {len(rows)} rows, each accepted "
        "by the rule `kernels.variant = auto: the deployment fits` (below, in `plan`'s words).", ""]
    return "\n".join(header + summary_table(rows)
                     + ["", "## Where the default costs arena, and the rule that accepted it", ""] + rule_lines(rows)
                     + ["", "## Nodes that fall back to the reference kernel with `--kernels arena`", "",
                        "The arena is the trial plan's with that node fast again (the others as decided before "
                        "it).", ""] + fallback_table(rows)) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS / "arena_variants.md")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    started = time.perf_counter()
    rows = []
    for model in [*INT8_MODELS, mobilenet_v2()]:
        for target in TARGETS:
            rows.append(measure(model, target))
            log.info("%s %s: arena reference %d, default %d, arena-first %d", rows[-1]["model"], target,
                     rows[-1]["reference"]["arena"], rows[-1]["auto"]["arena"], rows[-1]["arena"]["arena"])
    command = "python benchmarks/arena_variants_bench.py" + (" " + " ".join(argv or sys.argv[1:])).rstrip()
    args.out.write_text(render(rows, command, time.perf_counter() - started, os.getloadavg()))
    log.info("wrote %s", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
