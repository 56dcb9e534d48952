"""Model-level memory planning vs TFLite Micro and Vela, the U-Net study, the exact planner.

    python benchmarks/plan_bench.py [--quick] [--out benchmarks/results/plan.md]

1. Every int8 model in ../shared/models: the live-set lower bound of the file's order
   (no reuse), TFLite Micro's planned arena (the "head" figure ``print_allocations()``
   prints), Vela's SRAM use (``vela --accelerator-config ethos-u55-128``, summary CSV
   ``sram_memory_used`` KiB), and our arena: file order without reuse, file order with
   reuse (the plan ``--export-tflm`` writes; TFLM's head on the exported model is re-read
   and outputs compared), memory-aware order with reuse. "Views only": Reshape & co. alias
   their input (always on), no in-place / overlap / concat reuse - the live-set bound counts
   a view as a tensor of its own, so this can be below the bound (micro_speech).
2. CP-SAT (``plan.allocators.exact``) on the no-reuse buffers of every model and U-Net:
   optimum or gap to its proven bound, and time.
3. U-Net variants (tools/make_unet.py), planned as the int8 deployment would be: imported,
   cleaned up (BN / ReLU fused, NHWC), every float activation re-typed to int8 (planning
   only needs byte sizes). Columns: file order / memory-aware order without reuse, with
   overlap reuse (NHWC, proved from the C kernels), and with concat in place measured on the
   NCHW graph (channel slices are contiguous only in a channel-planar layout; the NHWC
   kernels of runtime/ cannot write into interleaved channel slices, so this column is what
   a planar layout would give, not something the C runtime can run today).
"""
from __future__ import annotations

import argparse
import csv
import glob
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from paths import INT8_MODELS, REPO, SHARED_MODELS  # noqa: E402

MODELS = SHARED_MODELS
sys.path.insert(0, str(REPO / "tools"))

from mcudeploy.importers import load_model  # noqa: E402
from mcudeploy.passes.fold_constants import FoldConstants  # noqa: E402
from mcudeploy.passes.fuse_activation import FuseActivation  # noqa: E402
from mcudeploy.passes.pipelines import run_pipeline  # noqa: E402
from mcudeploy.passes.remove_noops import RemoveNoOps  # noqa: E402
from mcudeploy.plan.allocators.exact import allocate_exact  # noqa: E402
from mcudeploy.plan.liveness import tensor_lives, to_buffers  # noqa: E402
from mcudeploy.plan.memory_plan import plan_memory  # noqa: E402

log = logging.getLogger("plan_bench")


def tflm_head(path: Path) -> tuple[object, int]:
    """A tflite-micro interpreter on ``path`` and its arena head."""
    from tflite_micro.python.tflite_micro import runtime

    from mcudeploy.exporters.tflm_offline import tflm_arena_head
    interpreter = runtime.Interpreter.from_file(str(path))
    return interpreter, tflm_arena_head(interpreter)


def vela_sram_kib(path: Path) -> float | None:
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(["vela", str(path), "--output-dir", folder, "--accelerator-config",
                               "ethos-u55-128"], capture_output=True, text=True)
        files = glob.glob(os.path.join(folder, "*summary*.csv"))
        if done.returncode != 0 or not files:
            return None
        return float(next(csv.DictReader(open(files[0])))["sram_memory_used"])


def same_outputs(original, exported, count: int) -> bool:
    details = original.get_input_details(0)
    x = np.random.default_rng(0).integers(-128, 128, details["shape"]).astype(details["dtype"])
    for interpreter in (original, exported):
        interpreter.set_input(x, 0)
        interpreter.invoke()
    return all(np.array_equal(original.get_output(i), exported.get_output(i)) for i in range(count))


def exact_row(name: str, graph, order: list[str] | None, time_limit: float) -> dict:
    buffers = to_buffers(tensor_lives(graph, order), 16)
    plan = allocate_exact(buffers, None, time_limit=time_limit, workers=2)
    bound = plan.best_lower_bound
    return {"model": name, "buffers": len(buffers), "arena": plan.arena_size, "bound": bound, "proof": plan.proof,
            "gap_percent": 100.0 * (plan.arena_size - bound) / bound if bound else 0.0,
            "seconds": plan.seconds}


def shared_rows(time_limit: float) -> tuple[list[dict], list[dict]]:
    from mcudeploy.exporters.tflm_offline import export_tflm_offline
    rows, exact = [], []
    for model in INT8_MODELS:
        path = MODELS / model
        graph = load_model(path)
        started = time.perf_counter()
        file_plain = plan_memory(graph, schedule="file", reuse=False, time_limit=time_limit)
        file_reuse = plan_memory(graph, schedule="file", time_limit=time_limit)
        aware = plan_memory(graph, time_limit=time_limit)
        seconds = time.perf_counter() - started
        original, head = tflm_head(path)
        with tempfile.TemporaryDirectory() as folder:
            exported_path = export_tflm_offline(path, file_reuse, Path(folder) / "x.tflite").path
            exported, exported_head = tflm_head(exported_path)
            unchanged = same_outputs(original, exported, len(graph.outputs))
        rows.append({"model": Path(model).stem, "bound_file_order": file_plain.no_reuse_bound_bytes, "tflm_head": head,
                     "vela_sram_kib": vela_sram_kib(path), "ours_file_no_reuse": file_plain.arena_bytes,
                     "ours_file_reuse": file_reuse.arena_bytes, "tflm_head_with_our_offsets": exported_head,
                     "outputs_unchanged": unchanged, "ours_scheduled_reuse": aware.arena_bytes,
                     "reuses": len(aware.pairs), "seconds": seconds})
        exact.append(exact_row(Path(model).stem, graph, None, time_limit))
        log.info("%s", rows[-1])
    return rows, exact


def unet_graphs(size: int, upsample: str, skip_from: int, halve: bool):
    """(NHWC int8-typed graph, NCHW int8-typed graph) of one U-Net variant."""
    import onnx

    from make_unet import make_unet
    from mcudeploy.ir import DType
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "unet.onnx"
        onnx.save(make_unet(size, upsample, skip_from, halve), path)
        nhwc, nchw = load_model(path), load_model(path)
    run_pipeline(nhwc, "cleanup_nhwc_io")
    run_pipeline(nchw, [FoldConstants(), RemoveNoOps(), FuseActivation()])
    for graph in (nhwc, nchw):
        for value in graph.values():
            if not value.is_constant and value.dtype == DType.FLOAT32:
                value.dtype = DType.INT8
    return nhwc, nchw


def unet_rows(sizes, time_limit: float, exact_limit: float) -> tuple[list[dict], list[dict]]:
    from make_unet import variants
    rows, exact = [], []
    for size, upsample, skip_from, halve in variants(tuple(sizes)):
        name = f"unet{size} {upsample} skip{skip_from}{' halved' if halve else ''}"
        nhwc, nchw = unet_graphs(size, upsample, skip_from, halve)
        started = time.perf_counter()
        file_plain = plan_memory(nhwc, schedule="file", reuse=False, time_limit=time_limit)
        scheduled = plan_memory(nhwc, reuse=False, time_limit=time_limit)
        overlap = plan_memory(nhwc, time_limit=time_limit)
        concat = plan_memory(nchw, time_limit=time_limit, concat_in_place=True, overlap=False)
        concat_chosen = plan_memory(nchw, time_limit=time_limit, overlap=False)
        rows.append({"variant": name, "file_order": file_plain.arena_bytes, "scheduled": scheduled.arena_bytes,
                     "schedule_exact": scheduled.schedule_exact, "overlap": overlap.arena_bytes,
                     "concat_in_place_nchw": concat.arena_bytes, "concat_where_helps_nchw": concat_chosen.arena_bytes,
                     "concats_elided": len(concat_chosen.elided_nodes),
                     "seconds": time.perf_counter() - started})
        exact.append(exact_row(name, nhwc, scheduled.order, exact_limit))
        log.info("%s", rows[-1])
    return rows, exact


def pad_fold_rows(time_limit: float) -> list[dict]:
    """MobileNetV2 (ONNX, float32, NHWC after cleanup): explicit Pads, Pads folded, + overlap."""
    from mcudeploy.passes.fold_pads import fold_pads
    graph = load_model(MODELS / "onnx" / "mobilenetv2_0.5_128.onnx")
    run_pipeline(graph, "cleanup_nhwc_io")
    folded, names = fold_pads(graph)
    return [{"variant": "Pads kept", "arena": plan_memory(graph, reuse=False, time_limit=time_limit).arena_bytes},
            {"variant": f"{len(names)} Pads folded into their convs",
             "arena": plan_memory(folded, reuse=False, time_limit=time_limit).arena_bytes},
            {"variant": "Pads folded + in-place / overlap reuse",
             "arena": plan_memory(folded, time_limit=time_limit).arena_bytes}]


def kib(value) -> str:
    return "-" if value is None else f"{value / 1024:.1f}"


def vela_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def goal_lines(shared: list[dict]) -> list[str]:
    by_model = {r["model"]: r for r in shared}
    never_above = all(r["ours_scheduled_reuse"] <= r["tflm_head"] and r["ours_file_reuse"] <= r["tflm_head"]
                      for r in shared)
    above_bound = [r for r in shared if r["tflm_head"] > r["bound_file_order"]]
    resnet = by_model["resnet8_int8"]["ours_scheduled_reuse"]
    return [f"- ours never above TFLite Micro's head: {'yes' if never_above else 'NO'}",
            "- where TFLM is above the live-set bound (" + ", ".join(r["model"] for r in above_bound)
            + "), ours without in-place reuse reaches the bound: "
            + ("yes" if all(r["ours_file_no_reuse"] <= r["bound_file_order"] for r in above_bound) else "NO"),
            f"- ResNet-8 arena with in-place / overlap reuse: {resnet} bytes = {resnet / 1024:.2f} KiB "
            f"(goal <= 33 KiB: {'yes' if resnet <= 33 * 1024 else 'NO'}; TFLM: "
            f"{by_model['resnet8_int8']['tflm_head'] / 1024:.1f} KiB)",
            "- TFLM run with our offsets (offline plan): head equals our arena and outputs unchanged on every "
            "model: " + ("yes" if all(r["tflm_head_with_our_offsets"] == r["ours_file_reuse"] and r["outputs_unchanged"]
                                      for r in shared) else "NO")]


def markdown(shared: list[dict], unet: list[dict], exact: list[dict], pads: list[dict], command: str) -> str:
    lines = ["# Model memory planning: arena vs TFLite Micro, Vela, the live-set bound", "",
             f"Generated by `{command}` (all figures KiB = 1024 bytes, alignment 16, inputs and outputs in the "
             "arena as TFLM does). See the script's docstring for the methods.", "",
             "## Goals, checked on these figures", "", *goal_lines(shared), "",
             "## Shared int8 models", "",
             "| model | live-set bound, file order, no reuse | TFLM head | Vela SRAM (U55-128) | ours file order, views only "
             "| ours file order + reuse | TFLM head with our offsets (outputs unchanged) | ours scheduled + reuse "
             "| in-place / overlap reuses | time s |", "|" + "---|" * 10]
    for r in shared:
        lines.append(f"| {r['model']} | {kib(r['bound_file_order'])} | {kib(r['tflm_head'])} | "
                     f"{vela_text(r['vela_sram_kib'])} | "
                     f"{kib(r['ours_file_no_reuse'])} | {kib(r['ours_file_reuse'])} | "
                     f"{kib(r['tflm_head_with_our_offsets'])} ({'yes' if r['outputs_unchanged'] else 'NO'}) | "
                     f"{kib(r['ours_scheduled_reuse'])} | {r['reuses']} | {r['seconds']:.1f} |")
    lines += ["", "## U-Net variants (int8 activations, peak activation arena)", "",
              "| variant | file order, no reuse | memory-aware order, no reuse | + overlap reuse (NHWC, C kernels) "
              "| NCHW: concat in place everywhere | NCHW: concat in place where it helps (count) | time s |",
              "|" + "---|" * 7]
    for r in unet:
        lines.append(f"| {r['variant']} | {kib(r['file_order'])} | {kib(r['scheduled'])}"
                     f"{'' if r['schedule_exact'] else ' (heuristic)'} | {kib(r['overlap'])} | "
                     f"{kib(r['concat_in_place_nchw'])} | {kib(r['concat_where_helps_nchw'])} "
                     f"({r['concats_elided']}) | {r['seconds']:.1f} |")
    lines += ["", "## Pad folding: MobileNetV2 0.5 128 (ONNX, float32 activations, NHWC)", "",
              "| variant | arena KiB |", "|---|---|"]
    lines += [f"| {r['variant']} | {kib(r['arena'])} |" for r in pads]
    lines += ["", "## Exact planner (CP-SAT, 2 workers) on the no-reuse buffers", "",
              "| model | buffers | arena | proven bound | result | gap % | time s |", "|" + "---|" * 7]
    for r in exact:
        lines.append(f"| {r['model']} | {r['buffers']} | {kib(r['arena'])} | {kib(r['bound'])} | {r['proof']} | "
                     f"{r['gap_percent']:.2f} | {r['seconds']:.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="U-Net at 384 only, shorter time limits")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "plan.md")
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("mcudeploy").setLevel(logging.ERROR)
    time_limit = 4.0 if arguments.quick else 10.0
    shared, exact = shared_rows(time_limit)
    unet, unet_exact = unet_rows((384,) if arguments.quick else (512, 384), time_limit,
                                 5.0 if arguments.quick else 10.0)
    pads = pad_fold_rows(time_limit)
    command = "python benchmarks/plan_bench.py" + (" --quick" if arguments.quick else "")
    arguments.out.write_text(markdown(shared, unet, exact + unet_exact, pads, command), encoding="utf-8")
    arguments.out.with_suffix(".json").write_text(json.dumps(
        {"shared": shared, "unet": unet, "exact": exact + unet_exact, "pad_folding": pads}, indent=1) + "\n",
        encoding="utf-8")
    log.info("wrote %s", arguments.out)


if __name__ == "__main__":
    main()
