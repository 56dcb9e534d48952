"""Measure and fit the instruction model of the latency estimator (golden data, generated).

    python tools/fit_instruction_model.py measure [--board qemu-m4 qemu-m55] [--runtime mcudeploy cmsis-nn]
                                                  [--cmsis-nn PATH] [--preference reference auto dsp]
                                                  [--missing]
    python tools/fit_instruction_model.py fit
    python tools/fit_instruction_model.py all      (measure, then fit)

``measure`` builds synthetic single-layer graphs (``tools/instruction_samples.py``: seeded
random shapes, never a shared model), generates their C code, runs it under QEMU with
``-icount shift=0`` and the per-layer profile (exact instructions per layer), and writes
every sample -- kernel, variant, shape features, measured instructions -- to
``tools/data/instruction_samples_<runtime>_<board>.json``. For ``cmsis-nn`` it compiles
Arm's CMSIS-NN (a checkout given by ``--cmsis-nn``) with a timing harness instead
(``tools/cmsis_nn_measure.py``). Every kernel variant the core runs is measured: the
portable ``reference`` kernels (``kernels = reference``), whatever ``kernels = auto``
picks on the board's core (an optimised DSP / Helium variant when one is registered), and
(``dsp``, Helium boards only) the DSP variants a Helium core runs where its Helium variant
refuses a node (auto on the core with Helium hidden). Besides the main random draw, coverage
layers with large weight scales take the variants' general requantization path (shifts
>= 0). ``--missing`` measures only the batches the samples file lacks.

``fit`` solves, per (runtime, build, variant, kernel), the non-negative least-squares
problem ``min || (F c - n) / n ||`` over the features ``F`` of :mod:`mcudeploy.estimate.features`
(the loop counts, plus the blocked feature sets that forward selection finds to cut the
5-fold held-out error by 10 % or more; for an optimised variant also the counts of its own
loops, :mod:`mcudeploy.estimate.kernel_loops`, kept when their held-out error is lower;
the coverage layers' saturated outputs are left out of the reference kernels' fits)
(relative errors, so small layers count as much as large ones), plus the per-inference
overhead of ``network_run`` (``total - sum(layers) = a + b x layers``), and writes
``src/mcudeploy/estimate/data/instruction_model.json`` stamped with the date, the tool
versions, the git commit and this command. Nobody edits that file by hand: re-run this
script (a new kernel variant is a new measurement and a new fit, no code change).
"""
from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

TOOLS = Path(__file__).resolve().parent
REPO = TOOLS.parent
sys.path.insert(0, str(TOOLS))

from mcudeploy.driver import deploy  # noqa: E402
from mcudeploy.estimate.estimator import kernel_context  # noqa: E402
from mcudeploy.estimate.features import features_of  # noqa: E402
from mcudeploy.estimate.kernel_map import feature_family, kernel_of  # noqa: E402
from mcudeploy.options import DeploymentOptions  # noqa: E402
from mcudeploy.targets import MemoryRegion, load_target  # noqa: E402
from mcudeploy.validate.generated_code import random_integer_feeds, run_generated  # noqa: E402

log = logging.getLogger("fit_instruction_model")
DATA = TOOLS / "data"
MODEL_FILE = REPO / "src" / "mcudeploy" / "estimate" / "data" / "instruction_model.json"
BOARD_TARGETS = {"qemu-m4": "stm32l4r5", "qemu-m55": "stm32n6"}   # a target whose core the board emulates
BUILDS = {"qemu-m4": "cortex-m4", "qemu-m55": "cortex-m55"}
MIN_WEIGHT_INSTRUCTIONS = 400      # relative weights saturate below this (one SysTick tick = 40)


def samples_path(runtime: str, board: str) -> Path:
    return DATA / f"instruction_samples_{runtime}_{board}.json"


def board_target(board: str):
    """The board's core (from a built-in target) with one large SRAM: addresses do not change
    instruction counts, and a batch of layers needs more RAM than the chip has."""
    target = load_target(BOARD_TARGETS[board])
    regions = (MemoryRegion("SRAM", 0x2000_0000, 3 << 20, "sram", bandwidth=1e9, latency_cycles=1),
               MemoryRegion("FLASH", 0x0800_0000, 4 << 20, "flash", "r", bandwidth=1e9, latency_cycles=1))
    return replace(target.with_regions(regions, f"{board} measurement target"), npu=None)


def measure_batch(graph, board: str, preference: str) -> dict | None:
    """Every layer of ``graph`` measured on ``board`` (None: ``auto`` chose only reference
    kernels). ``dsp``: ``auto`` on the board's core with Helium hidden, so the DSP variants run
    (as they do on a Helium core where the Helium variant refuses the node)."""
    target = board_target(board)
    if preference == "dsp":
        target = replace(target, core=replace(target.core, mve="none"))
    kernels = "auto" if preference == "dsp" else preference
    deployment = deploy(graph, DeploymentOptions(kernels=kernels), target=target)
    if preference != "reference" and set(deployment.kernels.counts()) == {"reference"}:
        return None
    result = run_generated(deployment, random_integer_feeds(deployment.graph, 1, seed=3), board, profile=True)
    nodes = {node.name: node for node in deployment.graph.nodes}
    elided = set(deployment.plan.elided_nodes)
    names = [name for name in deployment.plan.order if name not in elided]
    layers = result.layer_instructions[0]
    samples = []
    for name, count in zip(names, layers):
        node = nodes[name]
        kernel = kernel_of(node, "mcudeploy")
        if kernel is None:
            continue
        context = kernel_context(deployment, node)
        samples.append({"graph": graph.name, "node": name, "op": node.op, "kernel": kernel,
                        "variant": deployment.kernels.choices[name].variant, "context": context,
                        "features": features_of(feature_family(kernel), node, context),
                        "instructions": count})
    graph_io = [*deployment.graph.inputs, *deployment.graph.outputs]
    return {"graph": graph.name, "total": result.instructions[0], "layers": len(layers),
            "layer_sum": int(sum(layers)), "io_tensors": len(graph_io),
            "io_bytes": sum(v.nbytes for v in graph_io), "samples": samples}


def batches_for(board: str, preference: str) -> list:
    """The synthetic batches a preference measures: the main draw and the coverage layers;
    ``dsp`` only on a Helium board, its own layers."""
    from instruction_samples import coverage_batches, dsp_on_helium_batches, sample_batches
    if preference == "dsp":
        return dsp_on_helium_batches() if board_target(board).core.mve != "none" else []
    return sample_batches() + coverage_batches()


def measure_mcudeploy(board: str, preferences: tuple[str, ...] = ("reference", "auto"), missing: bool = False) -> dict:
    """Every synthetic batch on ``board`` with each kernel preference; the batches of a
    preference not re-measured now are kept from the previous samples file (``missing``:
    also those of the re-measured preferences, measuring only the batches not in it)."""
    previous = samples_path("mcudeploy", board)
    kept = json.loads(previous.read_text()) if previous.exists() else {"batches": [], "failures": []}
    have = {(b["graph"], b.get("preference")) for b in kept["batches"]} if missing else set()
    batches = [b for b in kept["batches"] if missing or b.get("preference") not in preferences]
    failures = [f for f in kept.get("failures", []) if missing or f.split()[0] not in preferences]
    for preference in preferences:
        for batch in batches_for(board, preference):
            if (batch.graph.name, preference) in have:
                continue
            start = time.time()
            try:
                measured = measure_batch(batch.finish(), board, preference)
            except Exception as error:   # a broken kernel variant must not lose the other data
                lines = str(error).splitlines() or [repr(error)]
                why = next((line for line in lines if "error:" in line), lines[-1])[:300]
                log.warning("%s %s %s: not measured: %s", board, preference, batch.graph.name, why)
                failures.append(f"{preference} {batch.graph.name}: {why}")
                continue
            if measured is None:
                continue
            measured["preference"] = preference
            batches.append(measured)
            log.info("%s %s %s: %d layers in %.1f s", board, preference, batch.graph.name,
                     measured["layers"], time.time() - start)
    return {"runtime": "mcudeploy", "board": board, "build": BUILDS[board], "batches": batches,
            "failures": failures}


def nnls(matrix: np.ndarray, target: np.ndarray) -> np.ndarray:
    from scipy.optimize import nnls as scipy_nnls  # tools only: the package itself needs numpy alone
    return scipy_nnls(matrix, target, maxiter=50 * matrix.shape[1])[0]


STRUCTURE_PREFIXES = ("i2c4_", "i2c16_", "g2_", "g4_", "g4p_", "q4_", "q3_", "dwr_", "gather_", "pw4_", "dwd_", "dwb_", "dwp_", "fcd_", "fcm_",
                      "pool4_", "poolm_", "flat_", "requant_")
BLOCKED_PREFIXES = ("b224_", "b2416_", "b4416_", "b124_", "b1416_", "dw4_", "dw8_", "dw16_", "im2col",
                    *STRUCTURE_PREFIXES)
# the loop counts of each optimised variant's own C code (mcudeploy.estimate.kernel_loops): a
# candidate feature set beside the generic ones, kept when it predicts held-out layers better
VARIANT_STRUCTURE = {
    ("dsp-conv", "conv2d"): ("g2_", "q4_", "q3_", "i2c4_", "gather_", "pw4_", "requant_general", "requant_wide"),
    ("mve-conv", "conv2d"): ("g4_", "g4p_", "i2c16_", "requant_left"),
    ("dsp-depthwise", "depthwise_conv2d"): ("dwd_", "dwr_", "requant_wide"),
    ("mve-depthwise", "depthwise_conv2d"): ("dwb_", "dwp_", "requant_left"),
    ("dsp-fully-connected", "fully_connected"): ("fcd_", "requant_general", "requant_wide"),
    ("mve-fully-connected", "fully_connected"): ("g4_", "fcm_", "requant_left"),
    ("dsp-pool", "avg_pool"): ("pool4_",), ("dsp-pool", "max_pool"): ("pool4_",),
    ("mve-pool", "avg_pool"): ("poolm_",), ("mve-pool", "max_pool"): ("poolm_",),
    ("dsp-elementwise", "add"): ("flat_words", "flat_tail"), ("dsp-elementwise", "mul"): ("flat_words", "flat_tail"),
    ("mve-elementwise", "add"): ("flat_vectors",), ("mve-elementwise", "mul"): ("flat_vectors",),
}
FEATURE_SETS = {"loops": (), "blocked-2x2x4": ("b224_", "im2col"), "blocked-2x4x16": ("b2416_", "im2col"),
                "blocked-4x4x16": ("b4416_", "im2col"), "blocked-1x2x4": ("b124_", "im2col"),
                "blocked-1x4x16": ("b1416_", "im2col"), "depthwise-4": ("dw4_", "im2col"),
                "depthwise-8": ("dw8_", "im2col"), "depthwise-16": ("dw16_", "im2col")}
FOLDS = 5
BETTER_BY = 0.9           # a richer feature set must cut the held-out error by 10 %


def feature_names(samples: list[dict], feature_set: str) -> list[str]:
    """The features of ``feature_set``: "loops", a FEATURE_SETS name, names joined by "+", or
    "structure:" and the prefixes of a variant's own loops (VARIANT_STRUCTURE) joined by ","."""
    names = {name for s in samples for name in s["features"]}
    if feature_set.startswith("structure:"):
        prefixes = tuple(feature_set.removeprefix("structure:").split(","))
        return sorted(n for n in names if n == "calls" or n.startswith(prefixes))
    extra = tuple(prefix for name in feature_set.split("+") for prefix in FEATURE_SETS[name])
    return sorted(n for n in names if not n.startswith(BLOCKED_PREFIXES) or n.startswith(extra) and extra)


def solve(samples: list[dict], names: list[str]) -> np.ndarray:
    matrix = np.array([[s["features"].get(name, 0.0) for name in names] for s in samples], float)
    measured = np.array([s["instructions"] for s in samples], float)
    weights = 1.0 / np.maximum(measured, MIN_WEIGHT_INSTRUCTIONS)
    scale = np.maximum(np.abs(matrix).max(axis=0), 1.0)          # conditioning only
    return nnls(matrix * weights[:, None] / scale, measured * weights) / scale


def relative_errors(samples: list[dict], names: list[str], coefficients: np.ndarray) -> np.ndarray:
    matrix = np.array([[s["features"].get(name, 0.0) for name in names] for s in samples], float)
    measured = np.array([s["instructions"] for s in samples], float)
    return np.abs(matrix @ coefficients - measured) / np.maximum(measured, MIN_WEIGHT_INSTRUCTIONS)


def held_out_error(samples: list[dict], names: list[str]) -> float:
    """Relative RMS error of FOLDS-fold cross-validation (every sample predicted by a fit without it)."""
    errors = []
    for fold in range(FOLDS):
        train = [s for i, s in enumerate(samples) if i % FOLDS != fold]
        test = [s for i, s in enumerate(samples) if i % FOLDS == fold]
        if train and test:
            errors.extend(relative_errors(test, names, solve(train, names)))
    return float(np.sqrt(np.mean(np.square(errors)))) if errors else 0.0


def choose_feature_set(samples: list[dict]) -> tuple[str, float]:
    """Greedy forward selection: start from the loop counts, add the feature set that cuts the
    held-out error most, while it cuts it by at least 1 - BETTER_BY."""
    chosen, best = "loops", held_out_error(samples, feature_names(samples, "loops"))
    while True:
        used = set(chosen.split("+"))
        trials = {}
        for name in FEATURE_SETS:
            if name in used:
                continue
            union = f"{chosen}+{name}"
            if len(feature_names(samples, union)) > len(feature_names(samples, chosen)):
                trials[union] = held_out_error(samples, feature_names(samples, union))
        if not trials:
            return chosen, best
        union, score = min(trials.items(), key=lambda item: item[1])
        if score >= BETTER_BY * best:
            return chosen, best
        chosen, best = union, score


def fit_kernel(samples: list[dict], structure: tuple[str, ...] = ()) -> dict:
    """The NNLS fit on the feature set with the best held-out error (module docstring): the
    forward selection's, or the variant's own loop counts when they predict better."""
    chosen, score = choose_feature_set(samples)
    if structure:
        own = "structure:" + ",".join(structure)
        own_score = held_out_error(samples, feature_names(samples, own))
        if own_score < score:
            chosen, score = own, own_score
    scores = {chosen: score}
    names = feature_names(samples, chosen)
    coefficients = solve(samples, names)
    relative = relative_errors(samples, names, coefficients)
    return {"coefficients": {n: round(float(c), 6) for n, c in zip(names, coefficients) if c > 1e-9},
            "feature_set": chosen, "held_out_rms_error": round(scores[chosen], 5),
            "samples": len(samples), "max_relative_error": round(float(relative.max()), 5),
            "rms_relative_error": round(float(np.sqrt(np.mean(relative ** 2))), 5)}


def refresh_features(measurements: list[dict]) -> None:
    """Recompute every sample's features with the current feature code (the synthetic layers
    are regenerated from their seed), so a feature added later needs no new measurement."""
    from instruction_samples import coverage_batches, dsp_on_helium_batches, sample_batches
    from mcudeploy.estimate.estimator import requant_facts
    from mcudeploy.reference.int_executor import prepare_graph
    nodes, facts = {}, {}
    for batch in sample_batches() + coverage_batches() + dsp_on_helium_batches():
        graph = batch.finish()
        params = prepare_graph(graph)
        for node in graph.nodes:
            nodes[(graph.name, node.name)] = node
            facts[(graph.name, node.name)] = requant_facts(node, params.get(node.name))
    stale = 0
    for measurement in measurements:
        for batch in measurement["batches"]:
            for sample in batch["samples"]:
                node = nodes.get((sample.get("graph", batch.get("graph")), sample["node"]))
                if node is None or node.op != sample["op"]:
                    stale += 1
                    continue
                key = (sample.get("graph", batch.get("graph")), sample["node"])
                sample["context"] = {**sample.get("context", {}), **facts[key]}   # the current requant facts
                sample["features"] = features_of(feature_family(sample["kernel"]), node, sample["context"])
    if stale:
        log.warning("%d samples kept their stored features (their layer is no longer generated)", stale)


COVERAGE_BATCHES = ("wide", "bias")   # instruction_samples.coverage_batches: for the variants' requantization paths
OVERHEAD_TERMS = ("per_inference", "per_layer", "per_io_tensor", "per_io_byte")


def fit_overhead(batches: list[dict]) -> dict:
    """``network_run`` around the layers: ``total - sum(profiled layers) = a + b layers + c io_tensors
    + d io_bytes`` (argument checks, the input / output copies; ``b`` is negative: it takes back
    the profiling hook each profiled layer count includes). Least squares over the batches."""
    design = np.array([[1.0, b["layers"], b["io_tensors"], b["io_bytes"]] for b in batches])
    extra = np.array([b["total"] - b["layer_sum"] for b in batches], float)
    solution, *_ = np.linalg.lstsq(design, extra, rcond=None)
    residual = np.abs(design @ solution - extra)
    return {**{term: round(float(value), 3) for term, value in zip(OVERHEAD_TERMS, solution)},
            "batches": len(batches), "max_residual_instructions": round(float(residual.max()), 1)}


def fit_all(measurements: list[dict]) -> dict:
    models: dict = {}
    for measurement in measurements:
        runtime, build = measurement["runtime"], measurement["build"]
        groups: dict[tuple[str, str], list[dict]] = {}
        for batch in measurement["batches"]:
            for sample in batch["samples"]:
                if sample["variant"] == "reference" and batch["graph"].startswith(COVERAGE_BATCHES):
                    continue   # saturated outputs of no use to the reference kernels' one requantization
                groups.setdefault((sample["variant"], sample["kernel"]), []).append(sample)
        target = models.setdefault(runtime, {}).setdefault(build, {"kernels": {}})
        for (variant, kernel), samples in sorted(groups.items()):
            structure = VARIANT_STRUCTURE.get((variant, kernel.removesuffix("_s16")), ())
            target["kernels"].setdefault(variant, {})[kernel] = fit_kernel(samples, structure)
        timed = [batch for batch in measurement["batches"] if "total" in batch]
        if timed:   # generated programs: network_run's own overhead (CMSIS-NN cases are calls alone)
            target["overhead"] = fit_overhead(timed)
        target["measured_on"] = measurement["board"]
    return models


def _version(command: list[str]) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=20).stdout.splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "unavailable"


def stamp(argv: list[str]) -> dict:
    commit = _version(["git", "-C", str(REPO), "rev-parse", "HEAD"])
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain"], capture_output=True,
                           text=True).stdout.strip()
    return {"generated": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": "python tools/fit_instruction_model.py " + " ".join(argv),
            "git_commit": commit + (" (working tree modified)" if dirty else ""),
            "tools": {"arm-none-eabi-gcc": _version(["arm-none-eabi-gcc", "--version"]),
                      "qemu-system-arm": _version(["qemu-system-arm", "--version"]),
                      "python": sys.version.split()[0], "numpy": np.__version__},
            "method": "per (runtime, build, variant, kernel): non-negative least squares of exact QEMU "
                      "(-icount shift=0) instruction counts of synthetic single layers on the features of "
                      "mcudeploy.estimate.features, relative errors; see this script's docstring"}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=("measure", "fit", "all"))
    parser.add_argument("--board", nargs="+", default=list(BOARD_TARGETS), choices=list(BOARD_TARGETS))
    parser.add_argument("--runtime", nargs="+", default=["mcudeploy"], choices=("mcudeploy", "cmsis-nn"))
    parser.add_argument("--cmsis-nn", type=Path, help="a checkout of ARM-software/CMSIS-NN (runtime cmsis-nn)")
    parser.add_argument("--preference", nargs="+", default=["reference", "auto", "dsp"],
                        choices=("reference", "auto", "dsp"),
                        help="kernel preferences to (re-)measure; the others' samples are kept "
                             "(dsp: the DSP variants on a Helium board)")
    parser.add_argument("--missing", action="store_true",
                        help="measure only the batches the samples file lacks, keep every other")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    DATA.mkdir(exist_ok=True)
    if args.step in ("measure", "all"):
        for runtime in args.runtime:
            for board in args.board:
                if runtime == "cmsis-nn":
                    from cmsis_nn_measure import measure_cmsis_nn
                    measurement = measure_cmsis_nn(board, args.cmsis_nn, BUILDS[board])
                else:
                    measurement = measure_mcudeploy(board, tuple(args.preference), args.missing)
                measurement["stamp"] = stamp(argv)
                samples_path(runtime, board).write_text(json.dumps(measurement, indent=1) + "\n")
    if args.step in ("fit", "all"):
        measurements = [json.loads(path.read_text()) for path in sorted(DATA.glob("instruction_samples_*.json"))]
        refresh_features(measurements)
        document = {"stamp": stamp(argv), "sources": {m["runtime"] + "/" + m["build"]: m["stamp"]
                                                      for m in measurements},
                    "models": fit_all(measurements)}
        MODEL_FILE.parent.mkdir(parents=True, exist_ok=True)
        MODEL_FILE.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
        log.info("wrote %s", MODEL_FILE)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
