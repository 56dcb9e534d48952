"""The headline of issue 21: the search finds by itself what a hand-written configuration finds.

    python benchmarks/search_unet_bench.py [--sizes 512 256] [--no-qemu] [--no-on-chip-only]
                                           [--cache DIR] [--out FILE.md]

For each U-Net size (``tools/make_unet.py``, quantized as a user does with
``mcudeploy quantize unetN.onnx --calib one.npy --int8-io``, see ``trial_cost_bench.py``),
target ``stm32n6``, 2 cores, as a user runs it:

1. ``mcudeploy search unetN_int8.onnx --target stm32n6 --time T -o best.toml`` (T = 600 s at
   512, 300 s at 256; no hand-written configuration, no other option), wall time measured;
2. the hand configuration of ``benchmarks/tiling_bench.py`` (every level tiled,
   ``UNET_512_TILES``; halved at 256, each level's outputs spilled to hyperRAM, weights in
   octoFlash) evaluated by the same trial code (``search.trial.evaluate``): on-chip bytes,
   external bytes, estimated latency beside the search's written configuration and every point
   of its front, and of its on-chip front (the memory objective's candidates, which
   ``search -o BEST --front`` writes as ``BEST.trialN.toml``);
3. ``mcudeploy validate unetN_int8.onnx --config best.toml --on qemu-m55``: the generated code
   of the written configuration bit-exact with the integer reference under QEMU Cortex-M55;
   when the written one (the memory objective's knee) is not at least as good as the hand one
   on both axes, the same for the smallest on-chip front point that is (``-o --front`` writes
   it beside, as ``best.trialN.toml``);
4. at 512: ``search --on-chip-only`` (PSRAM forbidden) with the same time: FAIL and the
   what-if fixes it verified, within the budget.

Writes ``benchmarks/results/search_unet.md`` and ``.json`` (versions, commands, load).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from paths import REPO, RESULTS, git_commit

sys.path.insert(0, str(REPO / "benchmarks"))

from mcudeploy.driver import deployable_graph, load_graph  # noqa: E402
from mcudeploy.options import DeploymentOptions, TilingRegion  # noqa: E402
from mcudeploy.search.reasons import Constraints  # noqa: E402
from mcudeploy.search.trial import evaluate  # noqa: E402
from mcudeploy.targets import load_target  # noqa: E402
from tiling_bench import UNET_512_TILES, UNET_LEVELS  # noqa: E402
from trial_cost_bench import quantized_unet  # noqa: E402

TIME = {512: 600, 256: 300}
QEMU_SAMPLES = 1


def _halved(tiles):
    return tuple(max(1, t // 2) for t in tiles) if isinstance(tiles, tuple) else max(1, tiles // 2)


def hand_options(graph, size: int) -> DeploymentOptions:
    """tiling_bench's hand configuration (its last level ends at the model's last Conv)."""
    names = [n.name for n in graph.nodes]
    last_conv = [n.name for n in graph.nodes if n.op == "Conv"][-1]
    levels = [(start, end if end in names else last_conv) for start, end in UNET_LEVELS]
    tiles = UNET_512_TILES if size == 512 else tuple(_halved(t) for t in UNET_512_TILES)
    regions = tuple(TilingRegion(start, end, *(t if isinstance(t, tuple) else (t,)))
                    for (start, end), t in zip(levels, tiles))
    return DeploymentOptions(target="stm32n6", external_activations=False, weights="flash", tiling_regions=regions,
                             split_points=tuple(end for _, end in levels[:-1]))


def figures(metrics: dict) -> dict:
    return {"on_chip_bytes": metrics["on_chip_bytes"], "external_bytes": metrics["external_bytes"],
            "latency_ms": None if metrics["latency_us"] is None else round(metrics["latency_us"] / 1000, 1),
            "macc_overhead_percent": metrics.get("extra", {}).get("tiling_macc_overhead_percent"),
            "arena_off_chip": metrics.get("arena_off_chip")}


def hand(model: Path, size: int) -> dict:
    graph = deployable_graph(load_graph(model))
    options = hand_options(graph, size)
    started = time.perf_counter()
    _, trial = evaluate(graph, load_target("stm32n6"), options, Constraints())
    from dataclasses import asdict
    return {"status": trial.status, "seconds": round(time.perf_counter() - started, 1),
            "options": options.to_toml(), **figures(asdict(trial.metrics))}


def run(command: list[str], timeout: float) -> tuple[int, float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    return done.returncode, round(time.perf_counter() - started, 1), (done.stdout + done.stderr)[-4000:]


def search(model: Path, size: int, folder: Path, on_chip_only: bool = False) -> dict:
    tag = "on_chip" if on_chip_only else "auto"
    best, log, out = folder / f"best{size}.toml", RESULTS / f"search_unet{size}_{tag}.log", folder / f"s{size}_{tag}.json"
    command = [sys.executable, "-m", "mcudeploy", "search", str(model), "--target", "stm32n6", "--time",
               str(TIME[size]), "--log", str(log), "--json", str(out)]
    command += ["--on-chip-only"] if on_chip_only else ["-o", str(best), "--front"]
    code, seconds, text = run(command, TIME[size] * 3)
    return parse_search(command, code, seconds, text, out, log, best, folder)


def parse_search(command: list[str], code: int, seconds: float, text: str, out: Path, log: Path, best: Path,
                 folder: Path) -> dict:
    """The figures of one search from its --json file and trial log."""
    document = json.loads(out.read_text()) if out.exists() else {}
    if seconds != seconds:                       # taken from a finished run: its own duration
        seconds = document.get("seconds")
    trials = {t["trial"]: t for t in (json.loads(line) for line in log.with_suffix(".log.jsonl").read_text().splitlines()
                                      if line.startswith("{")) if isinstance(t, dict) and "trial" in t} \
        if log.with_suffix(".log.jsonl").exists() else {}
    result = {"command": " ".join(["mcudeploy", *command[3:]]).replace(str(folder) + "/", ""), "exit": code,
              "seconds": seconds, "trials_run": document.get("trials_run"), "tail": text[-1500:]}
    if document.get("best"):
        result["best"] = {"trial": document["best"]["trial"], "config": document["best"]["config"],
                          **figures(document["best"]["metrics"])}
        result["front"] = [{"trial": i, **figures(trials[i]["metrics"])} for i in document.get("front", [])
                           if i in trials and trials[i].get("metrics")]
        result["on_chip_front"] = [{"trial": i, **figures(trials[i]["metrics"])} for i in _on_chip_front(document, trials)]
        result["written"] = best.read_text() if best.exists() else None
    result["fixes"] = [{"kind": f["kind"], "verified": f["verified"], "passes": f["passes"], "title": f["title"],
                        "latency_ms": f["price"].get("latency_ms")} for f in document.get("fixes", [])]
    return result


def _on_chip_front(document: dict, trials: dict) -> list[int]:
    """The search's on-chip front (its --json), or, for a log written before the JSON had it,
    the same computed from the logged trials by the search's own rule."""
    if "on_chip_front" in document:
        return [i for i in document["on_chip_front"] if i in trials and trials[i].get("metrics")]
    from types import SimpleNamespace

    from mcudeploy.search.pareto import on_chip_front
    logged = [SimpleNamespace(index=i, passed=t["status"] == "PASS", metrics=SimpleNamespace(**t["metrics"]))
              for i, t in trials.items() if t.get("metrics") and t.get("phase") in ("default", "explore")]
    return [t.index for t in on_chip_front(logged)]


def qemu(model: Path, size: int, folder: Path, name: str | None = None) -> dict:
    """``validate --on qemu-m55`` of the written configuration (or of ``name`` beside it)."""
    best = folder / (name or f"best{size}.toml")
    # one random sample: QEMU runs Helium code at ~30 M instructions per second here (a U-Net 512
    # inference is ~7.5 G instructions); the default 10 samples took 23 min at 256 on 2 shared cores
    command = [sys.executable, "-m", "mcudeploy", "validate", str(model), "--config", str(best), "--on", "qemu-m55",
               "--samples", str(QEMU_SAMPLES), "--no-record"]
    code, seconds, text = run(command, 4 * 3600)
    return {"command": f"mcudeploy validate unet{size}_int8.onnx --config {best.name} --on qemu-m55 "
                       f"--samples {QEMU_SAMPLES}",
            "exit": code, "seconds": seconds, "bit_exact": code == 0 and "bit-exact" in text.lower(),
            "tail": text[-1200:]}


def dominating(found: dict, hand_figures: dict) -> dict | None:
    """The on-chip front's smallest point at least as good as the hand configuration on both
    axes, when the written one is not (the memory objective's knee may trade RAM for speed):
    ``-o BEST --front`` wrote it as ``BEST.trialN.toml``."""
    best = found.get("best")
    if not best or _better_or_equal(best, hand_figures):
        return None
    return next((p for p in found.get("on_chip_front", []) if _better_or_equal(p, hand_figures)), None)


def _better_or_equal(point: dict, reference: dict) -> bool:
    return (point["on_chip_bytes"] <= reference["on_chip_bytes"] and point["latency_ms"] is not None
            and reference["latency_ms"] is not None and point["latency_ms"] <= reference["latency_ms"])


def render(results: dict) -> str:
    lines = ["# The search against the hand configuration: U-Net on the STM32N6 (issue 21)", "",
             f"`{results['command']}` at commit {results.get('commit', '(not recorded)')} on {results['machine']}. "
             "Load average before / after: "
             f"{results['load_before']} / {results['load_after']}. See the script's docstring for the method.", ""]
    for size, entry in results["sizes"].items():
        found, hand_figures = entry["search"], entry["hand"]
        cost = next((line for line in found.get("tail", "").splitlines() if line.startswith("trial cost:")), None)
        lines += [f"## U-Net {size}", "", f"- search: `{found['command']}`: exit {found['exit']}, {found['seconds']} s "
                  f"wall, {found['trials_run']} trials" + (f"; {cost}" if cost else ""), ""]
        lines += ["| configuration | on-chip bytes | external bytes | estimated latency ms | MACC overhead % | "
                  "at least as good as the hand one |", "|---|---:|---:|---:|---:|:---:|",
                  f"| hand (tiling_bench) | {hand_figures['on_chip_bytes']:,} | {hand_figures['external_bytes']:,} | "
                  f"{hand_figures['latency_ms']} | {hand_figures['macc_overhead_percent']} | - |"]
        if found.get("best"):
            best = found["best"]
            lines.append(f"| **written by -o** (trial {best['trial']}) | {best['on_chip_bytes']:,} | "
                         f"{best['external_bytes']:,} | {best['latency_ms']} | {best['macc_overhead_percent']} | "
                         f"{'yes' if _better_or_equal(best, hand_figures) else 'no'} |")
            for point in found.get("front", []):
                lines.append(f"| front: trial {point['trial']}{' (arena off chip)' if point['arena_off_chip'] else ''} | "
                             f"{point['on_chip_bytes']:,} | {point['external_bytes']:,} | {point['latency_ms']} | "
                             f"{point['macc_overhead_percent']} | {'yes' if _better_or_equal(point, hand_figures) else 'no'} |")
            for point in found.get("on_chip_front", []):       # what `-o BEST --front` writes
                lines.append(f"| on-chip front: trial {point['trial']} | {point['on_chip_bytes']:,} | "
                             f"{point['external_bytes']:,} | {point['latency_ms']} | {point['macc_overhead_percent']} | "
                             f"{'yes' if _better_or_equal(point, hand_figures) else 'no'} |")
        else:
            lines.append("| search | nothing passes | | | | no |")
        for key in ("qemu", "qemu_dominating"):
            if entry.get(key):
                q = entry[key]
                lines += ["", f"- `{q['command']}`: exit {q['exit']}, {q['seconds']} s, bit-exact: **{q['bit_exact']}**"]
        if found.get("written"):
            lines += ["", "Written configuration:", "", "```toml", found["written"].strip(), "```"]
        if entry.get("on_chip_only"):
            o = entry["on_chip_only"]
            lines += ["", f"### --on-chip-only (PSRAM forbidden): exit {o['exit']}, {o['seconds']} s wall "
                      f"(budget {TIME[int(size)]} s), {o['trials_run']} trials", "",
                      "| fix | verified | passes | latency ms | what |", "|---|:---:|:---:|---:|---|"]
            lines += [f"| {f['kind']} | {f['verified']} | {f['passes']} | {f['latency_ms']} | {f['title']} |"
                      for f in o["fixes"]]
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[512, 256], choices=sorted(TIME))
    parser.add_argument("--no-qemu", action="store_true")
    parser.add_argument("--no-on-chip-only", action="store_true")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/mcudeploy-search-unet"))
    parser.add_argument("--out", type=Path, default=RESULTS / "search_unet.md")
    parser.add_argument("--merge", nargs="+", type=Path, default=[], metavar="RESULTS.json",
                        help="no measuring: write one report from the sizes of these results files")
    parser.add_argument("--search-json", nargs="+", default=[], metavar="SIZE=FILE",
                        help="take the search of SIZE from a finished run's --json FILE (its log in results/) "
                             "instead of running it again; the hand configuration and QEMU are still measured")
    arguments = parser.parse_args()
    if arguments.merge:
        merged = {"command": " + ".join(json.loads(p.read_text())["command"] for p in arguments.merge),
                  "machine": json.loads(arguments.merge[0].read_text())["machine"], "sizes": {}}
        loads = [json.loads(p.read_text()) for p in arguments.merge]
        merged["load_before"], merged["load_after"] = loads[0]["load_before"], loads[-1].get("load_after")
        merged["commit"] = " + ".join(sorted({d.get("commit", "(not recorded)") for d in loads}))
        for document in loads:
            merged["sizes"].update(document["sizes"])
        arguments.out.with_suffix(".json").write_text(json.dumps(merged, indent=1))
        arguments.out.write_text(render(merged))
        return
    given = dict(item.split("=", 1) for item in arguments.search_json)
    arguments.cache.mkdir(parents=True, exist_ok=True)
    results = {"command": "python benchmarks/search_unet_bench.py " + " ".join(sys.argv[1:]),
               "machine": f"{platform.machine()} ({os.cpu_count()} CPUs), Python {platform.python_version()}",
               "load_before": os.getloadavg()[0], "sizes": {},
               "commit": git_commit()}
    for size in arguments.sizes:
        model = quantized_unet(size, arguments.cache)
        if str(size) in given:
            out = Path(given[str(size)])
            log, best = RESULTS / f"search_unet{size}_auto.log", arguments.cache / f"best{size}.toml"
            found = parse_search(["python", "-m", "mcudeploy", "search", f"unet{size}_int8.onnx", "--target", "stm32n6",
                                  "--time", str(TIME[size]), "-o", best.name], 0, float("nan"), "", out, log, best,
                                 arguments.cache)
            found["note"] = f"search taken from {out.name} (a finished run), not run again"
        else:
            found = search(model, size, arguments.cache)
        entry = {"hand": hand(model, size), "search": found}
        if not arguments.no_qemu and entry["search"].get("best"):
            entry["qemu"] = qemu(model, size, arguments.cache)
            point = dominating(entry["search"], entry["hand"])
            if point is not None:
                entry["qemu_dominating"] = qemu(model, size, arguments.cache, f"best{size}.trial{point['trial']}.toml")
        if size == 512 and not arguments.no_on_chip_only:
            entry["on_chip_only"] = search(model, size, arguments.cache, on_chip_only=True)
        results["sizes"][str(size)] = entry
        results["load_after"] = os.getloadavg()[0]
        arguments.out.with_suffix(".json").write_text(json.dumps(results, indent=1))
        arguments.out.write_text(render(results))
    print(arguments.out.read_text())


if __name__ == "__main__":
    main()
