"""On-chip fits on the STM32H747 (issue 21): does ``mcudeploy search M --target stm32h747
--objective memory`` find a configuration whose activations stay on chip, and at what MACC cost?

    python benchmarks/h747_fit_bench.py [--time S] [--budget N] [--cache DIR] [--quick]
        -> results/h747_fit.md and .json

Models: every shared full-integer model (``INT8_MODELS``), and vendor-zoo-style models built by
``tools/make_zoo_models.py`` (Keras, seeded random weights, TFLite converter full-integer
post-training quantization): MobileNetV2 0.35 and SqueezeNet 1.1 at 224 (the zoo's shape) and
SqueezeNet 1.1 at 128. Per model: the untiled default plan (``plan --target stm32h747``: arena,
fit, MACC), then the search (objective memory; ``--budget`` trials for the shared models,
``--time`` seconds for the zoo models, 1 worker), its best configuration re-deployed from its
options (what ``plan --config`` of ``search -o`` runs): on-chip / external bytes, arena, the MACC
of the re-deployed graph against the untiled one (the tiles' halo recomputation), the arena
ratio best / untiled, and the critical SRAM limit the search bisected.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import mcudeploy
from mcudeploy.driver import deploy
from mcudeploy.options import DeploymentOptions
from mcudeploy.search import SearchRequest, run_search
from paths import INT8_MODELS, REPO, RESULTS, SHARED_MODELS

log = logging.getLogger("h747_fit_bench")
TARGET = "stm32h747"
ZOO = [("mobilenetv2_035", 224), ("squeezenet11", 224), ("squeezenet11", 128)]


def zoo_models(cache: Path) -> list[Path]:
    """The zoo-style models, built once into ``cache`` by tools/make_zoo_models.py in a process
    of its own (TensorFlow and OR-Tools loaded in one process crash it)."""
    paths = []
    for name, size in ZOO:
        path = cache / f"{name}_{size}_int8.tflite"
        if not path.exists():
            subprocess.run([sys.executable, str(REPO / "tools" / "make_zoo_models.py"), str(cache), "--models", name,
                            "--sizes", str(size)], check=True, capture_output=True)
        paths.append(path)
    return paths


def _figures(deployment) -> dict:
    ledger, plan = deployment.ledger, deployment.plan
    return {"fits": ledger.fits, "arena_bytes": plan.arena_bytes, "external_bytes": plan.external_bytes,
            "arena_region": plan.placement.arena_region if plan.placement else None,
            "macc": deployment.mapping.total_macc if deployment.mapping is not None else 0}


def measure(model: Path, request: SearchRequest) -> dict:
    default = deploy(model, DeploymentOptions(target=TARGET))
    started = time.perf_counter()
    result = run_search(model, request)
    seconds = time.perf_counter() - started
    row = {"model": model.stem, "untiled": _figures(default), "trials": len(result.trials),
           "seconds": round(seconds, 1), "found": result.best is not None}
    if result.best is None:
        row["reasons"] = result.default.reasons[:1] if result.default else []
        return row
    options = result.best_options()
    again = deploy(model, options)
    best = result.best.metrics
    row["best"] = {**_figures(again), "on_chip_bytes": best.on_chip_bytes, "search_external_bytes": best.external_bytes,
                   "config": {k: v for k, v in result.best.config.items() if result.default.config.get(k) != v},
                   "tiling_regions": best.extra.get("tiling_regions", [])}
    row["on_chip_fit"] = again.ledger.fits and again.plan.external_bytes == 0 and best.external_bytes == 0
    row["macc_overhead_percent"] = round(100 * (row["best"]["macc"] / row["untiled"]["macc"] - 1), 2)
    row["arena_ratio"] = round(again.plan.arena_bytes / default.plan.arena_bytes, 4)
    if result.critical is not None and result.critical.found:
        row["critical_sram_limit"] = result.critical.passing
    return row


def _short(region: str) -> str:
    """``first..last xN`` with the model-name prefix TensorFlow puts on every node dropped."""
    span, _, count = region.rpartition(" ")
    ends = [end.split("/", 1)[1] if "/" in end else end for end in span.split("..")]
    return f"{'..'.join(ends)} {count}"


def render(rows: list[dict], args, started: float) -> str:
    load = os.getloadavg()
    lines = ["# On-chip fits on the STM32H747 (search --objective memory)", "",
             f"Made by `python benchmarks/h747_fit_bench.py --time {args.time} --budget {args.budget}"
             f"{' --quick' if args.quick else ''}` in {time.time() - started:.0f} s; mcudeploy "
             f"{mcudeploy.__version__}, Python {platform.python_version()}, {os.cpu_count()} cores, load "
             f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} at the end.", "",
             " ".join(__doc__.split("\n\n")[2].split()), "",
             "| model | untiled arena (B) | untiled fits | search | best on-chip (B) | external (B) | best arena (B) "
             "| arena ratio | MACC overhead | critical limit (B) | what changed |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        untiled = row["untiled"]
        if not row["found"]:
            lines.append(f"| {row['model']} | {untiled['arena_bytes']} | {untiled['fits']} | nothing passes "
                         f"({row['trials']} trials, {row['seconds']} s) | - | - | - | - | - | - | "
                         f"{'; '.join(row.get('reasons', []))[:120]} |")
            continue
        best = row["best"]
        changed = ", ".join(f"{k}={v}" for k, v in best["config"].items()) or "defaults"
        if best["tiling_regions"]:
            changed += "; tiled: " + "; ".join(_short(region) for region in best["tiling_regions"])
        lines.append(f"| {row['model']} | {untiled['arena_bytes']} | {untiled['fits']} | "
                     f"{'on-chip fit' if row['on_chip_fit'] else 'no on-chip fit'} ({row['trials']} trials, "
                     f"{row['seconds']} s) | {best['on_chip_bytes']} | {best['external_bytes']} | "
                     f"{best['arena_bytes']} | {row['arena_ratio']:.3f} | {row['macc_overhead_percent']:+.2f} % | "
                     f"{row.get('critical_sram_limit', '-')} | {changed} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time", type=float, default=300.0, help="search seconds per zoo model")
    parser.add_argument("--budget", type=int, default=24, help="search trials per shared model")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/mcudeploy_zoo_models"))
    parser.add_argument("--quick", action="store_true", help="three shared models, the 128 SqueezeNet only")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for noisy in ("mcudeploy", "tensorflow", "absl"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    started = time.time()
    zoo = zoo_models(args.cache)
    shared = [SHARED_MODELS / name for name in (INT8_MODELS[:3] if args.quick else INT8_MODELS)]
    runs = [(path, SearchRequest(target=TARGET, objective="memory", budget=args.budget)) for path in shared]
    runs += [(path, SearchRequest(target=TARGET, objective="memory", budget=None, time_limit=args.time))
             for path in (zoo[-1:] if args.quick else zoo)]
    rows = []
    for path, request in runs:
        rows.append(measure(path, request))
        log.info("%s", json.dumps(rows[-1]))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "h747_fit.json").write_text(json.dumps(rows, indent=1) + "\n")
    text = render(rows, args, started)
    (RESULTS / "h747_fit.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
