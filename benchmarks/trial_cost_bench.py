"""What one search trial costs on the U-Net 512 (issue 21): median and worst seconds per trial.

    python benchmarks/trial_cost_bench.py [--size 512] [--time 600] [--out FILE.md]
    python benchmarks/trial_cost_bench.py --single          # one [tiling] auto deployment, profiled

Model: ``tools/make_unet.py`` U-Net (nearest up-sampling, skips from 32 channels), quantized
as a user does (``mcudeploy quantize unetN.onnx --calib one.npy --int8-io``, one
standard-normal sample, seed 0). Target ``stm32n6``.

* default: ``run_search`` with ``--on-chip-only`` (``external_activations = false``), objective
  memory, seed 0, ``-j 1``, the time budget ``--time``: every trial's seconds (the log's
  ``[s]``), their median and worst, the automatic-tiling trials apart (what they built and
  planned: ``TilingChoice.built`` / ``planned``), whether the what-if phase was reached;
* ``--single``: one ``deploy`` with ``[tiling] auto`` on chip only, the trial the search's
  worst was (849 s on 2 cores before the candidate cache, issue 21): seconds, candidates,
  tiled copies built, plans. Run it at an older commit (``PYTHONPATH=OLD/src``) for "before".
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from paths import REPO, RESULTS, git_commit

sys.path.insert(0, str(REPO / "tools"))

from mcudeploy.driver import deploy, deployable_graph, load_graph  # noqa: E402
from mcudeploy.options import DeploymentOptions  # noqa: E402


def quantized_unet(size: int, folder: Path) -> Path:
    import onnx

    from make_unet import make_unet
    model, calib, out = folder / f"unet{size}.onnx", folder / "calib.npy", folder / f"unet{size}_int8.onnx"
    onnx.save(make_unet(size), model)
    np.save(calib, np.random.default_rng(0).standard_normal((1, 1, size, size)).astype(np.float32))
    subprocess.run([sys.executable, "-m", "mcudeploy", "quantize", str(model), "--calib", str(calib), "-o", str(out),
                    "--int8-io", "--no-record"], check=True, capture_output=True)
    return out


def single(model: Path) -> dict:
    graph = deployable_graph(load_graph(model))
    started = time.perf_counter()
    deployment = deploy(graph, DeploymentOptions(target="stm32n6", tiling_auto=True, external_activations=False))
    tiling = deployment.memory_transform.tiling
    return {"seconds": round(time.perf_counter() - started, 1), "candidates": tiling.trials,
            "built": getattr(tiling, "built", None), "planned": getattr(tiling, "planned", None),
            "arena_before": tiling.arena_before, "arena_after": tiling.arena_after,
            "regions": [r.to_table() for r in tiling.regions]}


def search(model: Path, seconds: float, log: Path) -> dict:
    from mcudeploy.search import SearchRequest, run_search
    base = DeploymentOptions(target="stm32n6", external_activations=False)
    request = SearchRequest(target="stm32n6", options=base, locked=frozenset({"external_activations"}),
                            objective="memory", budget=None, time_limit=seconds, seed=0, jobs=1, log_path=log)
    started = time.perf_counter()
    result = run_search(str(model), request)
    wall = time.perf_counter() - started
    ran = [t for t in result.trials if t.status != "SKIP"]
    costs = [t.seconds for t in ran]
    auto = [t for t in ran if t.config.get("tiling_auto")]
    worst = max(ran, key=lambda t: t.seconds)
    return {"wall_seconds": round(wall, 1), "trials": len(ran), "pruned": result.pruned,
            "median_seconds": round(statistics.median(costs), 2), "worst_seconds": round(worst.seconds, 1),
            "worst_trial": worst.index, "worst_label": worst.label or "explore",
            "auto_tiling_trials": [{"trial": t.index, "seconds": round(t.seconds, 1)} for t in auto],
            "found": result.found, "fixes": [{"kind": f.kind, "verified": f.verified, "passes": f.passes,
                                              "title": f.title} for f in result.fixes],
            "what_if_reached": bool(result.fixes) or result.found}


def machine() -> str:
    commit = git_commit()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    import mcudeploy
    library = Path(mcudeploy.__file__).resolve().parents[1]
    return (f"commit {commit or 'unknown'}, mcudeploy from {library}, Python {platform.python_version()}, "
            f"numpy {np.__version__}; "
            f"{os.cpu_count()} cores shared with other work, load average {load} at the end")


def markdown(size: int, figures: dict, command: str) -> str:
    lines = [f"# Search trial cost on the U-Net {size} (stm32n6, on chip only)", "",
             f"Made by `{command}` (method in the script's docstring). {machine()}.", ""]
    if "single" in figures:
        s = figures["single"]
        lines += ["## One [tiling] auto deployment", "",
                  f"- {s['seconds']} s; {s['candidates']} candidates, {s['built']} tiled copies built, "
                  f"{s['planned']} plans; arena {s['arena_before']} -> {s['arena_after']} B", ""]
    if "search" in figures:
        r = figures["search"]
        lines += ["## Search", "",
                  f"- {r['trials']} trials run ({r['pruned']} pruned) in {r['wall_seconds']} s: median "
                  f"{r['median_seconds']} s, worst {r['worst_seconds']} s (trial {r['worst_trial']}, {r['worst_label']})",
                  "- automatic-tiling trials: " + (", ".join(f"trial {t['trial']} {t['seconds']} s"
                                                             for t in r["auto_tiling_trials"]) or "none"),
                  f"- found a configuration: {r['found']}; what-if phase reached: {r['what_if_reached']}", ""]
        lines += [f"  - fix {f['kind']}: {'verified' if f['verified'] else 'NOT verified'}"
                  f"{', passes' if f['passes'] else ''} - {f['title']}" for f in r["fixes"]]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--time", type=float, default=600.0)
    parser.add_argument("--single", action="store_true", help="one [tiling] auto deployment only")
    parser.add_argument("--out", type=Path, default=RESULTS / "trial_cost.md")
    arguments = parser.parse_args()
    figures: dict = {}
    with tempfile.TemporaryDirectory() as folder:
        model = quantized_unet(arguments.size, Path(folder))
        if arguments.single:
            figures["single"] = single(model)
        else:
            figures["search"] = search(model, arguments.time, arguments.out.with_suffix(".log"))
    command = " ".join(["python benchmarks/trial_cost_bench.py", *sys.argv[1:]])
    arguments.out.write_text(markdown(arguments.size, figures, command), encoding="utf-8")
    arguments.out.with_suffix(".json").write_text(json.dumps({"command": command, **figures}, indent=1) + "\n",
                                                  encoding="utf-8")
    print(arguments.out.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
