"""Section 3 of ``benchmarks/estimate_bench.py``: the STM32N6 single int8 layers of
``published_latency/n6_single_layers.csv`` (method in that script's docstring), and 3b: what those
rows can say about the octoFlash bandwidth (a scan of the target's figure, issue 22).

    run_n6() -> dict;  n6_markdown(result) -> list[str]
"""
from __future__ import annotations

import csv
import statistics
import sys
from dataclasses import replace

from mcudeploy.driver import deploy
from mcudeploy.estimate import estimate
from mcudeploy.options import DeploymentOptions
from mcudeploy.targets import load_target
from paths import REPO, SHARED

sys.path.insert(0, str(REPO / "tools"))
from layer_graphs import N6_SINGLE_LAYERS  # noqa: E402

PUBLISHED = SHARED / "data" / "published_latency"


def _pct(value: float) -> str:
    return f"{value:+.1%}"




def n6_layer(builder, target=None) -> tuple:
    """One published layer deployed as ST measured it: executor vendor-npu (the NPU runs it; the
    default executor is mcudeploy's CPU code, which has no NPU layer), its weights where the
    vendor keeps them (octoFlash, the default under that executor), I/O in user buffers."""
    from layer_graphs import LayerBatch
    batch = LayerBatch("n6_layer", seed=1)
    builder(batch)
    deployment = deploy(batch.finish(), DeploymentOptions(target="stm32n6", io_in_arena=False, executor="vendor-npu"),
                        target=target)
    return deployment, estimate(deployment)


FLASH = "octoFlash"
FLASH_SCAN_MB_PER_S = (5, 10, 20, 30, 50, 80, 120, 167, 250, 400, 800, 1600)


def _with_flash_bandwidth(mb_per_s: float):
    """stm32n6 with the octoFlash at ``mb_per_s`` (the .mpool byte_width / freq_ratio dropped)."""
    target = load_target("stm32n6")
    regions = tuple(replace(r, bandwidth=mb_per_s * 1e6, byte_width=0.0, freq_ratio=0.0) if r.name == FLASH else r
                    for r in target.regions)
    return target.with_regions(regions, f"stm32n6, {FLASH} {mb_per_s:g} MB/s")


def run_n6_flash(records: list[dict]) -> dict:
    """What the single-layer rows say about the octoFlash bandwidth (issue 22): every row's
    estimate with the weights in octoFlash at each bandwidth of FLASH_SCAN_MB_PER_S. The lower
    bound is the smallest bandwidth at which no row's estimate moved by more than 1 % from its
    value at the highest bandwidth; below it the weight stream would be the epoch's binding term."""
    runnable = [r for r in records if r["latency_ms"] != "FAIL"]
    scan: dict[str, list[float]] = {}
    weights_in_flash = True
    for record in runnable:
        key = f"{record['layer']} {record['filters']} {record['kernel']}"
        builder = N6_SINGLE_LAYERS[(record["layer"], record["filters"], record["kernel"])]
        scan[key] = []
        for bandwidth in FLASH_SCAN_MB_PER_S:
            deployment, result = n6_layer(builder, _with_flash_bandwidth(bandwidth))
            weights_in_flash &= set(deployment.plan.weights.values()) == {FLASH}
            scan[key].append(result.latency_ms)
    moved = [max(abs(ms[i] / ms[-1] - 1) for ms in scan.values()) for i in range(len(FLASH_SCAN_MB_PER_S))]
    bound = next(bw for bw, move in zip(FLASH_SCAN_MB_PER_S, moved) if move <= 0.01)
    flash_kib = {f"{r['layer']} {r['filters']} {r['kernel']}": float(r["flash_kib"]) for r in runnable}
    return {"bandwidths_mb_per_s": list(FLASH_SCAN_MB_PER_S), "latency_ms": scan, "largest_move": moved,
            "lower_bound_mb_per_s": bound, "weights_in_flash": weights_in_flash, "flash_kib": flash_kib,
            "target_mb_per_s": next(r.bandwidth for r in load_target("stm32n6").regions if r.name == FLASH) / 1e6}


def run_n6() -> dict:
    rows = []
    with open(PUBLISHED / "n6_single_layers.csv", newline="") as handle:
        records = list(csv.DictReader(handle))
    overhead = load_target("stm32n6").npu.run_overhead_us
    for record in records:
        deployment, result = n6_layer(N6_SINGLE_LAYERS[(record["layer"], record["filters"], record["kernel"])])
        head = next(layer for layer in result.layers if layer.device == "npu")
        epochs, work = head.hardware_epochs, head.work_bytes
        ram = (deployment.graph.inputs[0].nbytes + work) / 1024
        measured = None if record["latency_ms"] == "FAIL" else float(record["latency_ms"])
        rows.append({"layer": f"{record['layer']} {record['filters']} {record['kernel']}", "measured_ms": measured,
                     "estimated_ms": round(result.latency_ms, 4), "hardware_us": result.latency_us - overhead,
                     "epochs": epochs, "ram_kib_model": round(ram, 2), "ram_kib_st": float(record["ram_kib"]),
                     "failure": result.failures[0] if result.failures else "", "st_notes": record["notes"],
                     "bound": head.bound, "cause": head.cause,
                     "weights_regions": sorted(set(deployment.plan.weights.values()))})
    runnable = [r for r in rows if r["measured_ms"] is not None]
    for row in runnable:
        others = [o["measured_ms"] * 1000 - o["hardware_us"] for o in runnable if o is not row]
        row["loo_overhead_us"] = statistics.median(others)
        row["loo_ms"] = round((row["hardware_us"] + row["loo_overhead_us"]) / 1000, 4)
        row["error"] = row["estimated_ms"] / row["measured_ms"] - 1
        row["loo_error"] = row["loo_ms"] / row["measured_ms"] - 1
    return {"rows": rows, "run_overhead_us": overhead, "flash": run_n6_flash(records),
            "weights_regions": sorted({region for r in rows for region in r["weights_regions"]}),
            "max_abs_error": max(abs(r["error"]) for r in runnable),
            "max_abs_loo_error": max(abs(r["loo_error"]) for r in runnable)}


def n6_markdown(n6: dict) -> list[str]:
    lines = ["## 3. STM32N6570-DK single int8 layers (Neural-ART), 64x64x3 input", "",
             f"Worst error {n6['max_abs_error']:.1%} with the target's run overhead ({n6['run_overhead_us']:g} us); "
             f"worst {n6['max_abs_loo_error']:.1%} with the overhead re-derived leaving the row out.", "",
             "| layer | ST ms | estimated ms | error | LOO ms | LOO error | epochs | RAM KiB model / ST | bound | verdict / ST notes |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in n6["rows"]:
        measured = "FAIL" if r["measured_ms"] is None else f"{r['measured_ms']:g}"
        error = _pct(r["error"]) if "error" in r else "-"
        loo = (f"{r['loo_ms']:g} | {_pct(r['loo_error'])}") if "loo_ms" in r else "- | -"
        verdict = f"PREDICTED FAIL: {r['failure']}" if r["failure"] else "runs"
        lines.append(f"| {r['layer']} | {measured} | {r['estimated_ms']:g} | {error} | {loo} | {r['epochs']} | "
                     f"{r['ram_kib_model']:g} / {r['ram_kib_st']:g} | {r['bound']} | {verdict}; ST: {r['st_notes']} |")
    lines += ["", f"Every row is deployed with `--executor vendor-npu` (the default executor, mcudeploy's CPU code, "
                  f"runs no layer on the NPU); the weights sit in {', '.join(n6.get('weights_regions', []))}, where "
                  "the vendor keeps them (the default under that executor)."]
    return lines + (n6_flash_markdown(n6["flash"]) if "flash" in n6 else [])


def n6_flash_markdown(flash: dict) -> list[str]:
    """Section 3b: can these rows calibrate the octoFlash bandwidth? (the scan of run_n6_flash)."""
    bandwidths = flash["bandwidths_mb_per_s"]
    lines = ["", "### 3b. The octoFlash bandwidth: what these rows can calibrate", "",
             f"The target file's octoFlash figure is {flash['target_mb_per_s']:g} MB/s (ST's `.mpool` byteWidth / "
             "freqRatio, never measured). The only public STM32N6 latencies in `../shared/data/published_latency` "
             "are these single layers (`mlperf_tiny_stm32.csv` has no STM32N6 row). Each row's estimate (ms) with its "
             "weights in octoFlash at each bandwidth:", "",
             "| layer | weights KiB | " + " | ".join(f"{b:g} MB/s" for b in bandwidths) + " |",
             "|---|---|" + "---|" * len(bandwidths)]
    for layer, values in flash["latency_ms"].items():
        lines.append(f"| {layer} | {flash['flash_kib'][layer]:g} | " + " | ".join(f"{v:.4g}" for v in values) + " |")
    lines.append("| largest change vs the last column | | " + " | ".join(f"{m:.1%}" for m in flash["largest_move"]) + " |")
    lines += ["", f"Not calibrated, because the data do not permit it: the rows' weights are {min(flash['flash_kib'].values()):g}"
                  f"-{max(flash['flash_kib'].values()):g} KiB, streamed once per epoch while the accelerators compute; "
                  f"from {flash['lower_bound_mb_per_s']:g} MB/s up no row's estimate moves by more than 1 %, so the rows "
                  f"bound the bandwidth from below (about {flash['lower_bound_mb_per_s']:g} MB/s or more) and say nothing "
                  f"above it: {flash['target_mb_per_s']:g} MB/s and 1.6 GB/s fit them equally. A calibration needs an "
                  "STM32N6 measurement whose epochs are bound by the weight stream (a model with MBs of weights in "
                  "octoFlash, e.g. a MobileNet from ST's model zoo measured with its weights in flash); the figure stays "
                  "ST's `.mpool` one until then (notes/DECISIONS.md)."]
    return lines
