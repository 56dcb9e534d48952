"""Benchmark: mcudeploy's generated code against Arm CMSIS-NN, layer by layer, on the same
networks, weights, quantization and activations, both measured in this run.

Run ``python benchmarks/cmsis_nn_bench.py --cmsis-nn PATH [--cmsis-nn-commit SHA]
[--cmsis-core PATH]`` (about five minutes on 2 idle cores; PATH is a source folder of
github.com/ARM-software/CMSIS-NN, compiled here and never copied into the repository). Writes
``benchmarks/results/cmsis_nn.md`` and ``cmsis_nn.json``; ``--from-json`` rewrites the
markdown from the json.

Per model (ResNet-8, DS-CNN, VWW, person detection; MobileNetV2 0.5 128 quantized here with
``mcudeploy quantize --weights tflite --int8-io`` on eight scikit-image photos) and core (M4:
target stm32h743 on QEMU mps2-an386; M55: target stm32n6 on QEMU mps3-an547):

* ours: the generated code with the core's kernel variants, instructions per layer from the
  profiling build and per inference from the plain one (``kernels_bench.profile_layers``);
* CMSIS-NN, in its default build and with ``-DCMSIS_NN_USE_REQUANTIZE_INLINE_ASSEMBLY``: every
  layer of the same deployed graph through the function TFLite Micro's CMSIS-NN kernel calls
  (``tools/cmsis_nn_layers.py``), with the real weights, the quantization mcudeploy's integer
  reference prepares and the reference's input activations of the same seeded input, its
  output compared byte for byte with the reference's (``tools/cmsis_nn_harness.c``);
* both at -O2, counted under QEMU ``-icount shift=0`` through SysTick (resolution 40 / 31.25
  instructions). A layer CMSIS-NN has no kernel for is counted at our figure in its totals
  (stated per layer).
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from cmsis_nn_layers import layer_records, write_layer_file  # noqa: E402
from cmsis_nn_measure import BUILDS, build_harness, build_library, describe_checkout, run_harness  # noqa: E402
from kernels_bench import CORES, layer_type, profile_layers, seeded_feeds  # noqa: E402
from mcudeploy.driver import deploy  # noqa: E402
from mcudeploy.ir import get_op  # noqa: E402
from mcudeploy.options import DeploymentOptions  # noqa: E402
from mcudeploy.reference.int_executor import run_int  # noqa: E402
from paths import RESULTS, SHARED_MODELS, git_commit  # noqa: E402

log = logging.getLogger("cmsis_nn_bench")
MOBILENET = "MobileNetV2 0.5 128"
MODELS = {"ResNet-8": "mlperf_tiny/resnet8_int8.tflite", "DS-CNN": "mlperf_tiny/dscnn_kws_int8.tflite",
          "VWW": "mlperf_tiny/mobilenetv1_vww_int8.tflite", "person detection": "tflite_micro/person_detect_int8.tflite",
          MOBILENET: "onnx/mobilenetv2_0.5_128.onnx"}
PHOTOS = ("astronaut", "chelsea", "coffee", "rocket", "cat", "immunohistochemistry", "colorwheel", "retina")
OTHER_TYPES = {"Softmax": "softmax", "Transpose": "transpose", "Reshape": "reshape"}
BUILD_NAMES = tuple(BUILDS)


def quantized_mobilenet(work: Path) -> Path:
    """MobileNetV2 0.5 128 of ../shared quantized by ``mcudeploy quantize`` (cached in ``work``)."""
    import skimage.data
    from skimage.transform import resize
    output = work / "mobilenetv2_0.5_128_int8.tflite"
    if output.is_file():
        return output
    work.mkdir(parents=True, exist_ok=True)
    images = [resize(getattr(skimage.data, name)()[..., :3], (128, 128), anti_aliasing=True) for name in PHOTOS]
    calibration = (np.stack(images).astype(np.float32) * 2 - 1).transpose(0, 3, 1, 2)
    np.save(work / "calibration.npy", calibration)
    subprocess.run([sys.executable, "-m", "mcudeploy", "quantize", str(SHARED_MODELS / MODELS[MOBILENET]),
                    "--input-shape", "input_1:0=1,3,128,128", "--calib", str(work / "calibration.npy"),
                    "--weights", "tflite", "--int8-io", "--no-record", "-o", str(output)],
                   check=True, capture_output=True, text=True)
    return output


def model_path(name: str, work: Path) -> Path:
    return quantized_mobilenet(work) if name == MOBILENET else SHARED_MODELS / MODELS[name]


def harnesses(core: str, checkout: Path, work: Path, core_include: Path | None = None) -> dict[str, Path]:
    """The layer-file harness linked with each build of the library of ``checkout``, for ``core``."""
    _, _, cpu, board = CORES[core]
    elves = {}
    for build in BUILD_NAMES:
        folder = work / f"{cpu}-{build}"
        library = build_library(checkout, cpu, build, folder / "library", core_include=core_include)
        elves[build] = build_harness(library, checkout, board, cpu, folder)
    return elves


def type_of(node) -> str:
    kind = layer_type(node)
    return OTHER_TYPES.get(node.op, node.op.lower()) if kind == "other" else kind


def shape_of(node) -> str:
    """``HxWxC -> O, kHxkW /stride`` of a window layer, else the input shape."""
    x, out = node.inputs[0], node.outputs[0]
    text = "x".join(map(str, x.shape[1:])) + f" -> {out.shape[-1]}"
    if node.op == "Conv":
        kh, kw = node.inputs[1].shape[1:3]
        text += f", {kh}x{kw} /{node.attrs['strides'][0]}"
    return text


def _layer_rows(graph, records, ours: dict[str, int], cmsis: dict[str, list]) -> list[dict]:
    nodes = {node.name: node for node in graph.nodes}
    measured = iter(range(sum(record.blob is not None for record in records)))
    rows = []
    for record in records:
        node = nodes[record.node]
        row = {"node": record.node, "op": record.op, "type": type_of(node), "macc": int(get_op(node.op).macc(node)),
               "shape": shape_of(node), "kernel": record.kernel, "ours": ours.get(record.node, 0),
               "reason": record.reason}
        if record.blob is not None:
            index = next(measured)
            row["cmsis"] = {build: counts[index][0] for build, counts in cmsis.items()}
            row["mismatches"] = {build: counts[index][1] for build, counts in cmsis.items()}
            if min(row["cmsis"].values()) < 0:
                row["reason"] = f"refused by the harness (status {min(row['cmsis'].values())})"
                row.pop("cmsis")
        rows.append(row)
    return rows


def cmsis_layers(deployment, feeds: dict, core: str, elves: dict[str, Path], folder: Path,
                 ours: dict[str, int]) -> list[dict]:
    """Every layer of ``deployment`` run on each CMSIS-NN build of ``elves`` (``feeds``: batched,
    as for ``profile_layers``; ``ours``: our instructions by node name): the layer rows."""
    graph = deployment.graph
    activations = run_int(graph, {key: array[0] for key, array in feeds.items()}, capture=True)
    records = layer_records(graph, activations, helium=core == "M55")
    folder.mkdir(parents=True, exist_ok=True)
    count = write_layer_file(records, folder / "layers.bin")
    cmsis = {build: run_harness(elf, CORES[core][3], folder, count) for build, elf in elves.items()}
    return _layer_rows(graph, records, ours, cmsis)


def measure(name: str, core: str, elves: dict[str, Path], work: Path) -> dict:
    target, engine = CORES[core][:2]
    deployment = deploy(model_path(name, work), DeploymentOptions(target=target, kernels="auto"))
    feeds = seeded_feeds(deployment.graph)
    result, exact, ours = profile_layers(deployment, engine, feeds)
    layers = cmsis_layers(deployment, feeds, core, elves, work / f"{Path(MODELS[name]).stem}-{core}", ours)
    return {"model": name, "core": core, "ours_inference": result.instructions[0], "ours_exact": exact,
            "variants": deployment.kernels.counts(), "layers": layers}


def totals(row: dict) -> dict:
    """Sums over the layers: ours, and each CMSIS-NN build (its missing layers at our count)."""
    layers = row["layers"]
    result = {"macc": sum(layer["macc"] for layer in layers), "ours": sum(layer["ours"] for layer in layers)}
    for build in BUILD_NAMES:
        result[build] = sum(layer["cmsis"][build] if "cmsis" in layer else layer["ours"] for layer in layers)
    result["exact"] = all(sum(layer.get("mismatches", {}).values()) == 0 for layer in layers)
    return result


def by_type(rows: list[dict]) -> dict[str, dict]:
    """MACC and instructions per layer type over ``rows`` (layers CMSIS-NN ran only)."""
    types: dict[str, dict] = {}
    for row in rows:
        for layer in row["layers"]:
            if "cmsis" not in layer:
                continue
            entry = types.setdefault(layer["type"], {"macc": 0, "ours": 0, **{build: 0 for build in BUILD_NAMES}})
            entry["macc"] += layer["macc"]
            entry["ours"] += layer["ours"]
            for build in BUILD_NAMES:
                entry[build] += layer["cmsis"][build]
    return types


def _fewer(ours: int, theirs: int) -> str:
    return f"{100 * (1 - ours / theirs):+.1f} %" if theirs else "-"


def _per_macc(instructions: int, macc: int) -> str:
    return f"{instructions / macc:.3f}" if macc else f"({instructions:,})"


def _table_totals(rows: list[dict]) -> list[str]:
    lines = ["| model | core | MACC | ours (layers) | ours (inference) | CMSIS-NN default | CMSIS-NN inline asm | "
             "fewer vs default | fewer vs inline asm | bit-exact ours / CMSIS-NN |",
             "|---|:---:|---:|---:|---:|---:|---:|---:|---:|:---:|"]
    for row in rows:
        total = totals(row)
        exact = f"{'yes' if row['ours_exact'] else '**NO**'} / {'yes' if total['exact'] else '**NO**'}"
        lines.append(f"| {row['model']} | {row['core']} | {total['macc']:,} | {total['ours']:,} | "
                     f"{row['ours_inference']:,} | {total['default']:,} | {total['inline-asm']:,} | "
                     f"{_fewer(total['ours'], total['default'])} | {_fewer(total['ours'], total['inline-asm'])} | "
                     f"{exact} |")
    return lines


def _type_lines(label: str, types: dict[str, dict]) -> list[str]:
    lines = []
    for kind, entry in sorted(types.items(), key=lambda item: -item[1]["inline-asm"]):
        versus = _fewer(entry["ours"], entry["inline-asm"])
        behind = entry["ours"] > entry["inline-asm"]
        lines.append(f"| {label} | {kind} | {entry['macc']:,} | {_per_macc(entry['ours'], entry['macc'])} | "
                     f"{_per_macc(entry['default'], entry['macc'])} | {_per_macc(entry['inline-asm'], entry['macc'])} | "
                     f"{f'**{versus}**' if behind else versus} |")
    return lines


def _table_types(rows: list[dict]) -> list[str]:
    lines = []
    for core in CORES:
        chosen = [row for row in rows if row["core"] == core]
        if not chosen:
            continue
        lines += ["", f"Instructions per MACC by layer type, {core} (layers CMSIS-NN ran; a type without MACC: its "
                  "instructions in parentheses; bold: ours behind the inline-assembly build):", "",
                  "| model | layer type | MACC | ours | CMSIS-NN default | CMSIS-NN inline asm | fewer vs inline asm |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        lines += _type_lines("all models", by_type(chosen))
        for row in chosen:
            lines += _type_lines(row["model"], by_type([row]))
    return lines


TARGET_FEWER = 20.0                          # issue 25: at least 20 % fewer than the inline-assembly build
TARGET_CONV3X3 = {"M4": 1.0, "M55": 0.2}     # issue 25: 3x3 conv whole layer, instructions / MACC


def _targets(rows: list[dict]) -> list[str]:
    """The issue's targets against this run's figures (computed, not judged by hand)."""
    short = [f"{row['model']} {row['core']} {100 * (1 - t['ours'] / t['inline-asm']):+.1f} %"
             for row in rows if (t := totals(row))["ours"] > (1 - TARGET_FEWER / 100) * t["inline-asm"]]
    lines = ["", "Against issue 25's targets (this run):", "",
             f"- at least {TARGET_FEWER:.0f} % fewer instructions than the inline-assembly build on every model and "
             f"core: {'met' if not short else 'not met by ' + ', '.join(short)}"]
    for core in CORES:
        types = by_type([row for row in rows if row["core"] == core])
        behind = [f"{kind} ({_fewer(entry['ours'], entry['inline-asm'])})" for kind, entry in types.items()
                  if entry["ours"] > entry["inline-asm"]]
        conv = types.get("conv 3x3")
        conv_text = f"{conv['ours'] / conv['macc']:.3f}" if conv and conv["macc"] else "-"
        lines.append(f"- {core}: layer types behind the inline-assembly build (summed over the models): "
                     f"{', '.join(behind) or 'none'}; 3x3 conv {conv_text} instructions / MACC "
                     f"(target <= {TARGET_CONV3X3[core]})")
    return lines


def _table_deficits(rows: list[dict], count: int = 12) -> list[str]:
    """The layers where ours runs the most instructions more than the inline-assembly build."""
    deficits = sorted(((layer["ours"] - layer["cmsis"]["inline-asm"], row, layer) for row in rows
                       for layer in row["layers"] if "cmsis" in layer
                       and layer["ours"] > layer["cmsis"]["inline-asm"]), key=lambda item: -item[0])
    lines = ["", f"The {count} layers with the largest deficit against the inline-assembly build (instructions more):",
             "", "| model | core | layer | type | shape | CMSIS-NN kernel | ours | CMSIS-NN inline asm | more |",
             "|---|:---:|---|---|---|---|---:|---:|---:|"]
    for more, row, layer in deficits[:count]:
        lines.append(f"| {row['model']} | {row['core']} | {layer['node'][-48:]} | {layer['type']} | "
                     f"{layer.get('shape', '-')} | {layer['kernel']} | "
                     f"{layer['ours']:,} | {layer['cmsis']['inline-asm']:,} | {more:,} |")
    return lines if deficits else []


def _table_missing(rows: list[dict]) -> list[str]:
    lines = ["", "Layers not run on CMSIS-NN (counted at our figure in its totals):", ""]
    missing = sorted({(row["model"], layer["op"], layer["reason"]) for row in rows for layer in row["layers"]
                      if "cmsis" not in layer})
    lines += [f"- {model}: {op} -- {reason}" for model, op, reason in missing] or ["- none"]
    return lines


def _table_kernels(rows: list[dict]) -> list[str]:
    lines = ["", "CMSIS-NN functions the layers took (the wrappers' choice) and our kernel variants:", "",
             "| model | core | CMSIS-NN kernels | ours |", "|---|:---:|---|---|"]
    for row in rows:
        kernels: dict[str, int] = {}
        for layer in row["layers"]:
            if "cmsis" in layer:
                kernels[layer["kernel"]] = kernels.get(layer["kernel"], 0) + 1
        ours = ", ".join(f"{name} {count}" for name, count in sorted(row["variants"].items()))
        lines.append(f"| {row['model']} | {row['core']} | "
                     f"{', '.join(f'{name} {count}' for name, count in sorted(kernels.items()))} | {ours} |")
    return lines


NOTES = ["", "Counting: a CMSIS-NN layer is the library call alone (TFLite Micro's interpreter, its prepare "
         "step and its tensor bookkeeping are not counted); ours per layer is the kernel call of the generated "
         "network (the profiling build's SysTick reads around each layer); ours per inference is the plain "
         "build's whole `mcu_network_run`, dispatch included. The totals compare the per-layer sums. "
         "A layer without a MACC (softmax, transpose) shows its instructions in parentheses.",
         "", "Bit-exact: ours = the generated code's outputs equal `run_int`'s; CMSIS-NN = every layer's output, "
         "in both builds, equals `run_int`'s output of that layer byte for byte (per layer in the json: "
         "`mismatches`)."]


def _tool_version(command: list[str]) -> str:
    return subprocess.run(command, capture_output=True, text=True).stdout.splitlines()[0]


def write_markdown(rows: list[dict], meta: dict) -> str:
    lines = ["# mcudeploy against CMSIS-NN, measured side by side", "",
             f"`{meta['command']}` on {meta['machine']} ({meta['cpus']} CPUs, load average {meta['load_start']:.1f} "
             f"at the start, {meta['load_end']:.1f} at the end, {meta['seconds']:.0f} s); {meta['gcc']}; "
             f"{meta['qemu']}; mcudeploy {meta['mcudeploy']}. CMSIS-NN: {meta['cmsis_nn']} (source folder, built "
             "here, not part of this repository), -O2, default build and "
             "`-DCMSIS_NN_USE_REQUANTIZE_INLINE_ASSEMBLY`. M4 = target stm32h743 / QEMU mps2-an386, "
             "M55 = target stm32n6 / QEMU mps3-an547. Instructions under `-icount shift=0` through SysTick, one "
             "seeded random input per model. \"fewer\" = 1 - ours / CMSIS-NN (negative: ours runs more). "
             f"{MOBILENET}: ../shared's ONNX quantized here by `mcudeploy quantize --weights tflite --int8-io` "
             f"(calibration: {len(PHOTOS)} scikit-image photos scaled to [-1, 1]).", ""]
    lines += _table_totals(rows) + _targets(rows) + _table_types(rows) + _table_deficits(rows) + _table_missing(rows) + _table_kernels(rows) + NOTES
    return "\n".join(lines) + "\n"


def _meta(args, start: float, load_start: float) -> dict:
    commit = git_commit()
    command = "python benchmarks/cmsis_nn_bench.py " + " ".join(sys.argv[1:])
    return {"command": command.strip(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "load_start": load_start, "load_end": os.getloadavg()[0], "seconds": time.time() - start,
            "gcc": _tool_version(["arm-none-eabi-gcc", "--version"]),
            "qemu": _tool_version(["qemu-system-arm", "--version"]), "mcudeploy": f"commit {commit or 'unknown'}",
            "cmsis_nn": describe_checkout(args.cmsis_nn, args.cmsis_nn_commit)}


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cmsis-nn", type=Path, help="source folder of github.com/ARM-software/CMSIS-NN")
    parser.add_argument("--cmsis-nn-commit", help="its commit, when the folder is not a git checkout")
    parser.add_argument("--cmsis-core", type=Path, help="CMSIS_6's CMSIS/Core/Include (optional)")
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--cores", nargs="*", default=list(CORES), choices=list(CORES))
    parser.add_argument("--work", type=Path, default=Path("/tmp/mcudeploy-cmsis-nn-bench"),
                        help="build folder (the compiled libraries are reused from it)")
    parser.add_argument("--from-json", action="store_true", help="rewrite cmsis_nn.md from cmsis_nn.json")
    args = parser.parse_args()
    if not args.from_json and (args.cmsis_nn is None or not (args.cmsis_nn / "Include" / "arm_nnfunctions.h").is_file()):
        parser.error("--cmsis-nn PATH: a source folder of github.com/ARM-software/CMSIS-NN (with "
                     "Include/arm_nnfunctions.h) is needed")
    return args


def main() -> None:
    args = parse_arguments()
    logging.basicConfig(level=logging.ERROR)
    if args.from_json:
        saved = json.loads((RESULTS / "cmsis_nn.json").read_text())
        text = write_markdown(saved["rows"], saved["meta"])
    else:
        start, load_start = time.time(), os.getloadavg()[0]
        rows = []
        for core in args.cores:
            elves = harnesses(core, args.cmsis_nn, args.work, args.cmsis_core)
            for name in args.models:
                rows.append(measure(name, core, elves, args.work))
                log.error("%s %s done (%.0f s)", name, core, time.time() - start)
        meta = _meta(args, start, load_start)
        text = write_markdown(rows, meta)
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "cmsis_nn.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    (RESULTS / "cmsis_nn.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
