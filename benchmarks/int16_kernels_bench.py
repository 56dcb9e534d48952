"""Benchmark: the 16x8 kernel variants (int16 activations x int8 weights; DSP extension on
Cortex-M4, Helium on Cortex-M55) against the reference 16x8 kernels, on shared MLPerf models
quantized 16x8 by mcudeploy.

Run ``python benchmarks/int16_kernels_bench.py`` (a few minutes on 2 cores). Writes
``benchmarks/results/int16_kernels.md`` and ``int16_kernels.json``.

Models: ``resnet8_float.tflite`` and ``mobilenetv1_vww_float.tflite`` quantized by
``mcudeploy quantize --int16 <every node but the Softmax> --int8-io`` (the runtime's
Softmax takes int8 input, so the last Softmax stays int8: int8 in -> QUANTIZE -> 16x8 body
-> QUANTIZE -> int8 Softmax) with seeded random calibration data (the figures count
instructions, not accuracy). Per model and core (M4: target stm32h743 on QEMU mps2-an386;
M55: target stm32n6 on QEMU mps3-an547) and kernel choice (``reference`` / ``auto``):

* instructions per inference at -O2 (QEMU ``-icount shift=0`` through SysTick) and per
  layer (profiling build), summed by layer type with the MACCs;
* bit-exactness of the outputs against ``run_int`` and against LiteRT's reference kernels
  (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``) on the same .tflite file, two seeded inputs;
* the arena (planned bytes, scratch included).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from mcudeploy.driver import deploy  # noqa: E402
from mcudeploy.importers import load_model  # noqa: E402
from mcudeploy.ir import get_op  # noqa: E402
from mcudeploy.options import DeploymentOptions  # noqa: E402
from mcudeploy.reference.int_executor import run_int  # noqa: E402
from mcudeploy.validate.qemu import run_qemu  # noqa: E402
from paths import RESULTS, SHARED_MODELS, git_commit  # noqa: E402

CORES = {"M4": ("stm32h743", "qemu-m4"), "M55": ("stm32n6", "qemu-m55")}
MODELS = {"resnet8_float.tflite": (32, 32, 3), "mobilenetv1_vww_float.tflite": (96, 96, 3)}
TYPES = ("conv", "depthwise", "fully connected", "add", "other")
SAMPLES = 2


def layer_type(node) -> str:
    if node.op == "Conv":
        depthwise = node.attrs.get("group", 1) > 1 and node.inputs[1].shape[3] == 1
        return "depthwise" if depthwise else "conv"
    return {"Gemm": "fully connected", "Add": "add"}.get(node.op, "other")


def quantize_16x8(model: Path, shape: tuple, folder: Path) -> Path:
    """``model`` quantized 16x8 (every node but the Softmax), int8 I/O, seeded random calibration."""
    calibration = folder / f"{model.stem}_calibration.npy"
    np.save(calibration, np.random.default_rng(0).uniform(0, 1, (16, *shape)).astype(np.float32))
    nodes = [node.name for node in load_model(model).nodes if node.op != "Softmax"]
    output = folder / f"{model.stem.removesuffix('_float')}_16x8.tflite"
    subprocess.run([sys.executable, "-m", "mcudeploy", "quantize", str(model), "--calib", str(calibration),
                    "--int16", *nodes, "--int8-io", "--no-record", "-o", str(output)],
                   check=True, capture_output=True, cwd=folder)
    return output


def litert_outputs(path: Path, feeds: np.ndarray) -> list[np.ndarray]:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    interpreter = Interpreter(str(path), experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    interpreter.allocate_tensors()
    source, sink = interpreter.get_input_details()[0], interpreter.get_output_details()[0]
    outputs = []
    for sample in feeds:
        interpreter.set_tensor(source["index"], sample)
        interpreter.invoke()
        outputs.append(interpreter.get_tensor(sink["index"]).copy())
    return outputs


def measure(path: Path, core: str, kernels: str) -> dict:
    target, engine = CORES[core]
    deployment = deploy(path, DeploymentOptions(target=target, kernels=kernels))
    graph = deployment.graph
    source = graph.inputs[0]
    feeds = np.random.default_rng(1).integers(-128, 128, (SAMPLES, *source.shape)).astype(source.dtype.numpy)
    result = run_qemu(deployment, {source.name: feeds}, engine, profile=True)
    actual = result.outputs[graph.outputs[0].name]
    expected = [np.asarray(run_int(graph, {source.name: sample})[graph.outputs[0].name]) for sample in feeds]
    lite = litert_outputs(path, feeds)
    nodes = {node.name: node for node in graph.nodes}
    order = [name for name in deployment.plan.order if name not in deployment.plan.elided_nodes]
    per_type = {kind: [0, 0] for kind in TYPES}
    for name, instructions in zip(order, result.layer_instructions[0]):
        per_type[layer_type(nodes[name])][0] += instructions
        per_type[layer_type(nodes[name])][1] += int(get_op(nodes[name].op).macc(nodes[name]))
    return {"model": path.name, "core": core, "kernels": kernels, "instructions": result.instructions[0],
            "bit_exact_run_int": all(np.array_equal(e.reshape(-1), a.reshape(-1)) for e, a in zip(expected, actual)),
            "bit_exact_litert": all(np.array_equal(e.reshape(-1), a.reshape(-1)) for e, a in zip(lite, actual)),
            "per_type": per_type, "arena": deployment.plan.arena_bytes,
            "scratch": sum(p.size for p in deployment.plan.scratch.values()),
            "macc": sum(int(get_op(n.op).macc(n)) for n in graph.nodes), "variants": deployment.kernels.counts()}


def _ratio(instructions: int, macc: int) -> str:
    return f"{instructions / macc:.2f}" if macc else "-"


def _yes(flag: bool) -> str:
    return "yes" if flag else "**NO**"


def write_markdown(rows: list[dict], load: str) -> str:
    gcc = subprocess.run(["arm-none-eabi-gcc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    qemu = subprocess.run(["qemu-system-arm", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    lines = ["# 16x8 kernel variants (int16 activations x int8 weights) against the reference 16x8 kernels", "",
             f"`python benchmarks/int16_kernels_bench.py` on {platform.machine()} ({os.cpu_count()} CPUs, load "
             f"average {load} at the start); mcudeploy commit {git_commit()}; {gcc}; {qemu}. Models: the float MLPerf originals quantized 16x8 by "
             "`mcudeploy quantize --int16 <every node but the Softmax> --int8-io` (seeded random calibration). "
             "M4 = target stm32h743 (DSP variants) on QEMU mps2-an386; M55 = target stm32n6 (Helium variants) "
             "on QEMU mps3-an547. Instructions per inference at -O2 (SysTick under `-icount shift=0`), "
             f"per layer from the profiling build; {SAMPLES} seeded random int8 inputs checked bit for bit "
             "against `run_int` and LiteRT's reference kernels on the same .tflite.", "",
             "| model | MACC | core | reference | optimised | change | bit-exact (run_int / LiteRT) | "
             "arena ref / opt (scratch) |", "|---|---:|:---:|---:|---:|---:|:---:|---:|"]
    pairs = {}
    for row in rows:
        pairs.setdefault((row["model"], row["core"]), {})[row["kernels"]] = row
    for (model, core), pair in pairs.items():
        ref, opt = pair["reference"], pair["auto"]
        exact = all(r["bit_exact_run_int"] for r in (ref, opt)), all(r["bit_exact_litert"] for r in (ref, opt))
        lines.append(f"| {model} | {opt['macc']:,} | {core} | {ref['instructions']:,} | {opt['instructions']:,} | "
                     f"{100 * (opt['instructions'] / ref['instructions'] - 1):+.1f} % | {_yes(exact[0])} / "
                     f"{_yes(exact[1])} | {ref['arena']:,} / {opt['arena']:,} ({opt['scratch']:,}) |")
    lines += ["", "Instructions per MACC by layer type (reference -> optimised):", "",
              "| model | core | " + " | ".join(TYPES) + " |", "|---|:---:|" + "---:|" * len(TYPES)]
    for (model, core), pair in pairs.items():
        cells = [f"{_ratio(*pair['reference']['per_type'][k])} -> {_ratio(*pair['auto']['per_type'][k])}"
                 if pair["reference"]["per_type"][k][1] else
                 f"{pair['reference']['per_type'][k][0]:,} -> {pair['auto']['per_type'][k][0]:,} instr."
                 for k in TYPES]
        lines.append(f"| {model} | {core} | " + " | ".join(cells) + " |")
    lines += ["", "Variants chosen (auto):", ""]
    for (model, core), pair in pairs.items():
        variants = ", ".join(f"{name} {count}" for name, count in sorted(pair["auto"]["variants"].items()))
        lines.append(f"* {model}, {core}: {variants}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=list(MODELS))
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    load = f"{os.getloadavg()[0]:.2f}"
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for model in args.models:
            path = quantize_16x8(SHARED_MODELS / "mlperf_tiny" / model, MODELS[model], Path(folder))
            for core in CORES:
                for kernels in ("reference", "auto"):
                    rows.append(measure(path, core, kernels))
                logging.error("%s %s done", model, core)
    RESULTS.mkdir(parents=True, exist_ok=True)
    text = write_markdown(rows, load)
    (RESULTS / "int16_kernels.md").write_text(text)
    (RESULTS / "int16_kernels.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(text)


if __name__ == "__main__":
    main()
