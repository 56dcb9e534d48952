"""The compile-option search (issue 10): the U-Net scenario, every shared model, Vela, timing.

    python benchmarks/search_bench.py [--sections unet shared vela timing] [--quick] [--cache DIR]

1. **unet**: a 512x512 U-Net from ``tools/make_unet.py`` (1 channel; 32-64-128-256; skip
   concats, each skip reduced to 8 channels: 72 / 136 / 264-channel concats), quantized with
   mcudeploy's quantizer on 2 random samples (in memory: the QDQ round trip leaves the last
   conv in float, see the report), searched on ``stm32n6``:
   (a) on-chip pools only, ``--strict-alignment``: every trial FAILs and the search returns the
   verified fixes; (b) PSRAM allowed: the passing configuration and its estimated latency;
   (c) every claim re-checked through ``deploy`` with the written config (what ``plan
   --config`` runs) and the C generator (what ``generate --config`` runs).
2. **shared**: every shared full-integer model on four targets, objective memory: the defaults
   against the best configuration, and the critical SRAM limit checked (limit: PASS, one byte
   less: FAIL) by fresh deployments.
3. **vela**: the four MLPerf Tiny int8 models on ``alif-e7-he`` (Ethos-U55-128) and
   ``alif-e7-hp`` (Ethos-U55-256): Vela's defaults against the search's Vela configuration
   (objective latency and memory), SRAM and cycles, and mcudeploy's own estimate beside.
4. **timing**: a 200-trial search of ResNet-8 on ``stm32h743`` with ``-j 2``.

Results: ``benchmarks/results/search.md`` and ``.json`` (and the U-Net trial logs
``search_unet512_*.log``).
"""
from __future__ import annotations

import argparse
import json
import logging
import pickle
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from paths import INT8_MODELS, REPO, RESULTS, SHARED_MODELS

sys.path.insert(0, str(REPO / "tools"))

from mcudeploy.codegen import ProjectOptions, generate_files  # noqa: E402
from mcudeploy.driver import deploy, deployable_graph, load_graph  # noqa: E402
from mcudeploy.options import DeploymentOptions, load_options  # noqa: E402
from mcudeploy.search import Constraints, SearchRequest, run_search  # noqa: E402
from mcudeploy.search.pareto import objective_key  # noqa: E402
from mcudeploy.search.reshape import rebuild  # noqa: E402
from mcudeploy.search.rewrites import pad_channels  # noqa: E402
from mcudeploy.targets import load_target  # noqa: E402

log = logging.getLogger("search_bench")
MLPERF = ["resnet8_int8", "dscnn_kws_int8", "mobilenetv1_vww_int8", "fc_autoencoder_int8"]
SHARED_TARGETS = ["stm32h743", "stm32f746", "stm32u585", "stm32n6"]
VELA_TARGETS = ["alif-e7-he", "alif-e7-hp"]


def quantized_unet(size: int, odd_skip: int, cache: Path):
    """The quantized U-Net graph (cached: quantizing 512x512 takes about a minute)."""
    import onnx

    from make_unet import make_unet
    from mcudeploy.quantize.quantizer import QuantizationConfig, quantize_model
    cache.mkdir(parents=True, exist_ok=True)
    stem = cache / f"unet{size}_odd{odd_skip}"
    if stem.with_suffix(".pkl").exists():
        return pickle.loads(stem.with_suffix(".pkl").read_bytes()), None
    onnx.save(make_unet(size, odd_skip=odd_skip), stem.with_suffix(".onnx"))
    samples = stem.parent / f"{stem.name}_calib.npy"
    np.save(samples, np.random.default_rng(0).random((2, 1, size, size), dtype=np.float32))
    started = time.perf_counter()
    graph = quantize_model(load_graph(stem.with_suffix(".onnx")), str(samples),
                           QuantizationConfig(progress=False, evaluation_samples=1)).graph
    seconds = time.perf_counter() - started
    stem.with_suffix(".pkl").write_bytes(pickle.dumps(graph))
    return graph, seconds


def _trial_row(trial) -> dict:
    metrics = trial.metrics
    return {"trial": trial.index, "status": trial.status, "label": trial.label,
            "latency_ms": None if metrics is None or metrics.latency_us is None else round(metrics.latency_us / 1e3, 3),
            "on_chip_bytes": metrics.on_chip_bytes if metrics else None,
            "external_bytes": metrics.external_bytes if metrics else None,
            "reasons": sorted({r.code for r in trial.reasons})}


def _check_config(graph, path: Path, target: str) -> dict:
    """What ``plan --config`` and ``generate --config`` run: deploy with the file, generate C."""
    options = load_options(path)
    deployment = deploy(graph, options)
    files = generate_files(deployment, ProjectOptions()) if deployment.fits and deployment.precision == "integer" else {}
    return {"config": path.name, "fits": deployment.fits, "verdict": deployment.ledger.verdict()[:240],
            "generated_files": len(files), "arena_banks": deployment.plan.placement.arena_banks,
            "target": target}


def unet_section(args) -> dict:
    size = 128 if args.quick else 512
    graph, quantize_seconds = quantized_unet(size, 8, Path(args.cache))
    budget = 10 if args.quick else 24
    on_chip = DeploymentOptions(target="stm32n6", external_activations=False)
    logs = {name: RESULTS / f"search_unet{size}_{name}.log" for name in ("on_chip", "psram")}
    started = time.perf_counter()
    failed = run_search(graph, SearchRequest(target="stm32n6", options=on_chip, locked=frozenset({"external_activations"}),
                                             budget=budget, jobs=2, constraints=Constraints(strict_alignment=True),
                                             log_path=logs["on_chip"]))
    on_chip_seconds = time.perf_counter() - started
    started = time.perf_counter()
    passed = run_search(graph, SearchRequest(target="stm32n6", budget=budget, jobs=2, objective="latency",
                                             log_path=logs["psram"]))
    psram_seconds = time.perf_counter() - started
    checks = []
    folder = Path(tempfile.mkdtemp(prefix="search-bench-"))
    if passed.found:
        best = folder / "best.toml"
        best.write_text(passed.best_toml())
        checks.append({"claim": "PSRAM allowed: best configuration", **_check_config(graph, best, "stm32n6")})
    checks += _fix_checks(graph, failed, folder)
    return {"size": size, "quantize_seconds": quantize_seconds, "budget": budget,
            "on_chip": {"seconds": round(on_chip_seconds, 1), "trials": len(failed.trials), "pruned": failed.pruned,
                        "found": failed.found, "fixes": [fix.to_json() for fix in failed.fixes],
                        "log": logs["on_chip"].name, "excerpt": _excerpt(logs["on_chip"])},
            "psram": {"seconds": round(psram_seconds, 1), "trials": len(passed.trials), "found": passed.found,
                      "best": _trial_row(passed.best) if passed.best else None,
                      "best_toml": passed.best_toml() if passed.found else None, "log": logs["psram"].name},
            "checks": checks, "arithmetic": _arithmetic()}


def _resolution_checks(graph, result, folder: Path) -> list[dict]:
    """The resolution fixes with the channel padding as well: PASS on chip, every reason gone."""
    from mcudeploy.search.reasons import trial_reasons
    checks = []
    alignment = load_target("stm32n6").npu.channel_alignment
    padded = pad_channels(deployable_graph(graph.copy()), alignment).graph
    for fix in result.fixes:
        if fix.kind != "resolution" or not fix.verified:
            continue
        height = int(fix.price["input"].split("x")[0])
        model = rebuild(padded, {padded.inputs[0].name: (1, 1, height, height)})
        trial = result.trials[fix.trial]
        options = (result.base or DeploymentOptions()).with_values(
            **{k: v for k, v in trial.config.items() if k in DeploymentOptions.__dataclass_fields__})
        path = folder / f"fix_resolution_{height}.toml"
        path.write_text(options.to_toml())
        check = _check_config(model, path, "stm32n6")
        reasons = trial_reasons(deploy(model, load_options(path)), None, result.request.constraints)
        checks.append({"claim": f"input {height}x{height} + channel padding, on chip", **check,
                       "reasons_left": sorted({r.code for r in reasons})})
    return checks


def _fix_checks(graph, result, folder: Path) -> list[dict]:
    """Re-check every passing fix that is a configuration (and the resolution fix's model)."""
    checks = _resolution_checks(graph, result, folder)
    for fix in result.fixes:
        if not fix.passes or fix.trial is None:
            continue
        trial = result.trials[fix.trial]
        options = (result.base or DeploymentOptions()).with_values(
            **{k: v for k, v in trial.config.items() if k in DeploymentOptions.__dataclass_fields__})
        model = graph
        if fix.kind == "resolution":
            height = int(fix.price["input"].split("x")[0])
            model = rebuild(graph, {graph.inputs[0].name: (1, 1, height, height)})
        if fix.kind in ("alignment", "combined"):      # the rewritten (padded) model
            model = pad_channels(deployable_graph(graph.copy()), load_target("stm32n6").npu.channel_alignment).graph
        path = folder / f"fix_{fix.kind}.toml"
        path.write_text(options.to_toml())
        checks.append({"claim": f"fix {fix.kind}: {fix.title}", **_check_config(model, path, "stm32n6")})
    return checks


def _excerpt(path: Path, lines: int = 14) -> list[str]:
    text = path.read_text().splitlines()
    trials = [line for line in text if line.startswith("Trial ")]
    notes = [line for line in text if line.startswith("# fix") or line.startswith("# pruned")]
    return [line[:400] for line in text[:2] + trials[1:lines] + notes]


def _arithmetic() -> dict:
    n6 = load_target("stm32n6")
    on_chip = sum(r.size for r in n6.regions if r.on_chip and r.writable and r.holds_data)
    largest = max(r.size for r in n6.regions if r.on_chip and r.writable)
    return {"on_chip_bytes": on_chip, "largest_bank_bytes": largest,
            "one_384x384x32_int8_tensor_bytes": 384 * 384 * 32, "one_512x512x32_int8_tensor_bytes": 512 * 512 * 32,
            "largest_square_32ch_in_one_bank": int((largest / 32) ** 0.5)}


def shared_section(args) -> list[dict]:
    rows = []
    models = INT8_MODELS[:3] if args.quick else INT8_MODELS
    for name in models:
        model = SHARED_MODELS / name
        for target in SHARED_TARGETS[:2] if args.quick else SHARED_TARGETS:
            started = time.perf_counter()
            result = run_search(model, SearchRequest(target=target, budget=24, jobs=2))
            default, best = result.default, result.best
            row = {"model": Path(name).stem, "target": target, "trials": len(result.trials),
                   "seconds": round(time.perf_counter() - started, 2), "default": _trial_row(default),
                   "best": _trial_row(best) if best else None}
            if result.critical is not None and result.critical.found:
                limit = result.critical.passing
                options = result.best_options()
                row["critical_limit"] = limit
                row["limit_passes"] = deploy(model, options.with_values(sram_limit=limit)).fits
                row["one_less_fails"] = not deploy(model, options.with_values(sram_limit=limit - 1)).fits if limit else True
            row["never_worse"] = (not default.passed) or (best is not None and objective_key(best, "memory")[:-1]
                                                          <= objective_key(default, "memory")[:-1])
            rows.append(row)
            log.info("%s %s: %s", name, target, row)
    return rows


def vela_section(args) -> list[dict]:
    rows = []
    for name in MLPERF[:1] if args.quick else MLPERF:
        model = SHARED_MODELS / "mlperf_tiny" / f"{name}.tflite"
        for target in VELA_TARGETS[:1] if args.quick else VELA_TARGETS:
            row = {"model": name, "target": target}
            for objective in ("latency", "memory"):
                result = run_search(model, SearchRequest(target=target, backend="vela", objective=objective,
                                                         budget=6 if args.quick else 16, jobs=2))
                default, best = result.default, result.best
                row["default"] = _vela_figures(default)
                row[objective] = {**_vela_figures(best), "config": {k: v for k, v in best.config.items()
                                                                   if default.config.get(k) != v}} if best else None
                row["mcudeploy"] = result.baseline
            rows.append(row)
            log.info("vela %s %s: %s", name, target, row)
    return rows


def _vela_figures(trial) -> dict:
    if trial is None or trial.metrics is None:
        return {"status": trial.status if trial else None}
    extra = trial.metrics.extra
    return {"status": trial.status, "sram_bytes": extra.get("vela_sram_bytes"), "cycles": extra.get("vela_cycles"),
            "latency_ms": round(trial.metrics.latency_us / 1e3, 4), "flash_bytes": trial.metrics.flash_bytes}


def timing_section(args) -> dict:
    model = SHARED_MODELS / "mlperf_tiny" / "resnet8_int8.tflite"
    budget = 50 if args.quick else 200
    started = time.perf_counter()
    result = run_search(model, SearchRequest(target="stm32h743", budget=budget, jobs=2, critical_limit=False))
    exploration = time.perf_counter() - started
    started = time.perf_counter()
    with_limit = run_search(model, SearchRequest(target="stm32h743", budget=budget, jobs=2))
    total = time.perf_counter() - started
    return {"model": "resnet8_int8", "target": "stm32h743", "jobs": 2, "budget": budget,
            "trials": len(result.trials), "pruned": result.pruned, "seconds": round(exploration, 2),
            "with_critical_limit": {"trials": len(with_limit.trials), "seconds": round(total, 2)}}


def _kib(value) -> str:
    return "-" if value is None else f"{value / 1024:.1f}"


def _render_unet(unet: dict) -> list[str]:
    size, arithmetic = unet["size"], unet["arithmetic"]
    lines = [f"## U-Net {size}x{size} on stm32n6 (int8, skips of 8 channels: 72 / 136 / 264-channel concats)", "",
             "Quantized in memory with mcudeploy's quantizer on 2 random samples"
             + (f" ({unet['quantize_seconds']:.0f} s)" if unet.get("quantize_seconds") else " (cached)") + ".",
             f"Arithmetic first: the N6's on-chip RAM is {arithmetic['on_chip_bytes'] / 2**20:.2f} MiB in banks of at "
             f"most {arithmetic['largest_bank_bytes'] / 2**20:.2f} MiB; one 384x384x32 int8 tensor is "
             f"{arithmetic['one_384x384x32_int8_tensor_bytes'] / 2**20:.2f} MiB and one 512x512x32 tensor "
             f"{arithmetic['one_512x512x32_int8_tensor_bytes'] / 2**20:.2f} MiB: untiled, a 32-channel map fits one "
             f"bank up to {arithmetic['largest_square_32ch_in_one_bank']}x{arithmetic['largest_square_32ch_in_one_bank']}.",
             "", f"### (a) on-chip pools only, --strict-alignment: {unet['on_chip']['trials']} trials, "
             f"{unet['on_chip']['pruned']} pruned, {unet['on_chip']['seconds']} s, "
             f"{'PASS' if unet['on_chip']['found'] else 'nothing passes'}", "", "```"]
    lines += unet["on_chip"]["excerpt"] + ["```", "", "Verified fixes, cheapest first:", "",
                                           "| rank | fix | verified | passes | price | apply |", "|---|---|---|---|---|---|"]
    for fix in unet["on_chip"]["fixes"]:
        price = "; ".join(f"{k} {v}" for k, v in fix["price"].items())
        lines.append(f"| {fix['rank']} | {fix['kind']}: {fix['title']} | {fix['verified']} | {fix['passes']} | "
                     f"{price} | {'<br>'.join(fix['apply'][:4])} |")
    psram = unet["psram"]
    lines += ["", f"### (b) PSRAM allowed (objective latency): {psram['trials']} trials, {psram['seconds']} s", ""]
    if psram["best"]:
        best = psram["best"]
        lines += [f"Best: trial {best['trial']}, estimated latency {best['latency_ms']} ms, on-chip "
                  f"{_kib(best['on_chip_bytes'])} KiB, external {_kib(best['external_bytes'])} KiB.", "", "```toml",
                  psram["best_toml"].strip(), "```"]
    lines += ["", "### (c) claims re-checked with the written configurations (deploy + C generator)", "",
              "| claim | fits | reasons left | generated files | banks |", "|---|---|---|---|---|"]
    lines += [f"| {c['claim']} | {c['fits']} | {', '.join(c.get('reasons_left', [])) or '-'} | {c['generated_files']} | "
              f"{c['arena_banks']} |" for c in unet["checks"]]
    return lines + [""]


def _render_shared(rows: list[dict]) -> list[str]:
    lines = ["## Every shared model: defaults vs the best configuration (objective memory, 24 trials, -j 2)", "",
             "| model | target | default RAM KiB | default ms | best RAM KiB | best ms | critical sram_limit | "
             "limit PASS | limit-1 FAIL | never worse |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        default, best = row["default"], row["best"] or {}
        ram = lambda r: _kib((r.get("on_chip_bytes") or 0) + (r.get("external_bytes") or 0)) if r else "-"  # noqa
        lines.append(f"| {row['model']} | {row['target']} | {ram(default)} | {default['latency_ms']} | {ram(best)} | "
                     f"{best.get('latency_ms', '-')} | {row.get('critical_limit', '-')} | {row.get('limit_passes', '-')} "
                     f"| {row.get('one_less_fails', '-')} | {row['never_worse']} |")
    return lines + [""]


def _render_vela(rows: list[dict]) -> list[str]:
    lines = ["## Vela back end: Vela's defaults vs the search's Vela configuration", "",
             "| model | target | default SRAM KiB | default cycles | best-latency SRAM KiB | cycles | config | "
             "best-memory SRAM KiB | cycles | mcudeploy estimate ms |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        default, fast, small = row["default"], row.get("latency") or {}, row.get("memory") or {}
        config = ", ".join(f"{k}={v}" for k, v in (fast.get("config") or {}).items()) or "defaults"
        lines.append(f"| {row['model']} | {row['target']} | {_kib(default.get('sram_bytes'))} | {default.get('cycles')} "
                     f"| {_kib(fast.get('sram_bytes'))} | {fast.get('cycles')} | {config} | "
                     f"{_kib(small.get('sram_bytes'))} | {small.get('cycles')} | "
                     f"{row['mcudeploy'].get('mcudeploy_latency_ms')} |")
    return lines + [""]


def render(results: dict) -> str:
    lines = ["# Compile-option search (issue 10)", "", "Made by `python benchmarks/search_bench.py`; figures from "
             "`benchmarks/results/search.json`.", ""]
    if "unet" in results:
        lines += _render_unet(results["unet"])
    if "shared" in results:
        lines += _render_shared(results["shared"])
    if "vela" in results:
        lines += _render_vela(results["vela"])
    if "timing" in results:
        timing = results["timing"]
        lines += ["## Time", "", f"{timing['trials']} trials of {timing['model']} on {timing['target']} with -j "
                  f"{timing['jobs']}: {timing['seconds']} s ({timing['pruned']} more pruned without a trial); with the "
                  f"critical-limit bisection: {timing['with_critical_limit']['trials']} trials, "
                  f"{timing['with_critical_limit']['seconds']} s.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", nargs="+", default=["unet", "shared", "vela", "timing"])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "mcudeploy-search-bench"))
    args = parser.parse_args()
    path = RESULTS / "search.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    sections = {"unet": unet_section, "shared": shared_section, "vela": vela_section, "timing": timing_section}
    for name in args.sections:
        started = time.perf_counter()
        results[name] = sections[name](args)
        log.info("section %s: %.1f s", name, time.perf_counter() - started)
        path.write_text(json.dumps(results, indent=1, default=str) + "\n")
    (RESULTS / "search.md").write_text(render(results))


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    main()
