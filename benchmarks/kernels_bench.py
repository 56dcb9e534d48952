"""Benchmark: the optimised kernel variants (DSP extension on Cortex-M4, Helium on Cortex-M55)
against the reference kernels and against Arm's CMSIS-NN, on every full-integer shared model.

Run ``python benchmarks/kernels_bench.py`` (about five minutes on 2 idle cores). Writes
``benchmarks/results/kernels.md`` and ``kernels.json``. ``--models M.. --cores M4 --keep``
re-measures only the optimised kernels of those models on that core and keeps every other
row (and the reference measurements, whose code did not change) from ``kernels.json``.

Per model and core (M4: target stm32h743 on QEMU mps2-an386, DSP variants; M55: target
stm32n6 on QEMU mps3-an547, Helium variants) and per kernel choice (``reference``: the
portable C kernels; ``auto``: the variants the core picks):

* instructions per inference at -O2 (QEMU ``-icount shift=0`` through SysTick, one seeded
  random input; the count of one input is repeatable) and per layer (``profile=True``),
  summed into instructions per MACC by layer type;
* bit-exactness of the outputs against ``run_int``;
* code bytes of the runtime kernels the model links (text + rodata of ``runtime/src``
  objects in the linked image, ``--gc-sections``) at -O2 and -Os;
* the arena (planned bytes, scratch included) of each kernel choice.

With ``--cmsis-nn PATH`` (a source folder of github.com/ARM-software/CMSIS-NN) the same
deployed network of the optimised row also runs layer by layer on CMSIS-NN, default and
inline-assembly builds, in this run (``cmsis_nn_bench.cmsis_layers``: real weights, reference
activations, bit-exact per layer; layers CMSIS-NN has no kernel for counted at our figure);
without it the CMSIS-NN columns stay empty. ``cmsis_nn_bench.py`` gives the per-layer-type
comparison.
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

from mcudeploy.codegen import ProjectOptions, generate_files, write_project  # noqa: E402
from mcudeploy.codegen.boards import CORE_FLAGS  # noqa: E402
from mcudeploy.driver import deploy  # noqa: E402
from mcudeploy.ir import get_op  # noqa: E402
from mcudeploy.options import DeploymentOptions  # noqa: E402
from mcudeploy.reference.int_executor import run_int  # noqa: E402
from mcudeploy.validate.qemu import run_qemu  # noqa: E402
from mcudeploy.validate.size_report import module_sizes  # noqa: E402
from paths import INT8_MODELS, RESULTS, SHARED_MODELS  # noqa: E402

CORES = {"M4": ("stm32h743", "qemu-m4", "cortex-m4", "mps2-an386"),
         "M55": ("stm32n6", "qemu-m55", "cortex-m55", "mps3-an547")}
TYPES = ("conv 3x3", "conv 1x1", "conv, C <= 4 in", "conv other", "depthwise", "fully connected", "add / mul",
         "pool", "other")


def layer_type(node) -> str:
    if node.op == "Conv":
        x, w = node.inputs[0], node.inputs[1]
        if node.attrs.get("group", 1) > 1 and w.shape[3] == 1:
            return "depthwise"
        if x.shape[3] <= 4:
            return "conv, C <= 4 in"
        return {(3, 3): "conv 3x3", (1, 1): "conv 1x1"}.get(tuple(w.shape[1:3]), "conv other")
    return {"Gemm": "fully connected", "Add": "add / mul", "Mul": "add / mul", "AveragePool": "pool",
            "MaxPool": "pool"}.get(node.op, "other")


def code_bytes(project: Path, core: str, board: str, optimisation: str) -> int:
    """Text + rodata of the runtime kernels in the linked example at ``optimisation``."""
    objects = project / "build" / f"code-{core}{optimisation}"
    objects.mkdir(parents=True, exist_ok=True)
    flags = CORE_FLAGS[core].split() + ["-std=c99", optimisation, "-ffunction-sections", "-fdata-sections",
                                        "-ffp-contract=off", "-I.", "-Iruntime/include", "-Iruntime/src"]
    sources = sorted(str(p.relative_to(project)) for p in (project / "runtime" / "src").rglob("*.c"))
    sources += ["network.c", "network_data.c", "main.c", "boards/startup_cortex_m.c"]
    names = []
    for source in sources:
        target = objects / (source.replace("/", "_").removesuffix(".c") + ".o")
        subprocess.run(["arm-none-eabi-gcc", *flags, "-c", source, "-o", str(target)], cwd=project, check=True)
        names.append(str(target))
    map_file = objects / "example.map"
    subprocess.run(["arm-none-eabi-gcc", *CORE_FLAGS[core].split(), *names, "--specs=rdimon.specs", "-nostartfiles",
                    f"-Tboards/{board}.ld", "-Wl,--gc-sections", f"-Wl,-Map={map_file}", "-o",
                    str(objects / "example.elf")], cwd=project, check=True)
    modules = module_sizes(map_file.read_text(), objects)
    return sum(m.text + m.rodata for m in modules if m.name.startswith("runtime_src"))


def seeded_feeds(graph) -> dict:
    """One seeded random input per graph input, with a leading batch axis of 1."""
    rng = np.random.default_rng(0)
    return {v.name: rng.integers(-128, 128, (1, *v.shape)).astype(v.dtype.numpy) for v in graph.inputs}


def profile_layers(deployment, engine: str, feeds: dict) -> tuple[object, bool, dict[str, int]]:
    """Run the generated code on QEMU: the result, bit-exactness of the outputs against
    ``run_int`` and the instructions of each layer by node name (elided layers absent)."""
    graph = deployment.graph
    result = run_qemu(deployment, feeds, engine, profile=True)
    expected = run_int(graph, {name: array[0] for name, array in feeds.items()})
    exact = all(np.array_equal(np.asarray(expected[v.name]), result.outputs[v.name][0]) for v in graph.outputs)
    order = [name for name in deployment.plan.order if name not in deployment.plan.elided_nodes]
    return result, exact, dict(zip(order, result.layer_instructions[0]))


def cmsis_nn_totals(deployment, feeds: dict, core: str, layers: dict[str, int], cmsis: dict, label: str) -> dict:
    """Per CMSIS-NN build: the sum over the layers, ours' sum and bit-exactness (``cmsis``: the
    work folder and each core's harnesses, ``cmsis_nn_bench.harnesses``)."""
    from cmsis_nn_bench import cmsis_layers, totals
    folder = cmsis["work"] / f"kernels-{label}-{core}"
    rows = cmsis_layers(deployment, feeds, core, cmsis["harnesses"][core], folder, layers)
    return {key: value for key, value in totals({"layers": rows}).items() if key != "macc"}


def measure(path: Path, core: str, kernels: str, cmsis: dict | None = None) -> dict:
    target, engine, cpu, board = CORES[core]
    deployment = deploy(path, DeploymentOptions(target=target, kernels=kernels))
    graph = deployment.graph
    feeds = seeded_feeds(graph)
    result, exact, layers = profile_layers(deployment, engine, feeds)
    extra = {"cmsis_nn": cmsis_nn_totals(deployment, feeds, core, layers, cmsis, path.stem)} if cmsis else {}
    nodes = {node.name: node for node in graph.nodes}
    per_type = {kind: [0, 0] for kind in TYPES}
    rows = []
    for name, instructions in layers.items():
        node = nodes[name]
        per_type[layer_type(node)][0] += instructions
        per_type[layer_type(node)][1] += int(get_op(node.op).macc(node))
        rows.append([name, layer_type(node), instructions, int(get_op(node.op).macc(node))])
    with tempfile.TemporaryDirectory() as folder:
        write_project(generate_files(deployment, ProjectOptions()), Path(folder))
        sizes = {level: code_bytes(Path(folder), cpu, board, level) for level in ("-O2", "-Os")}
    return {"model": path.name, "core": core, "kernels": kernels, "bit_exact": exact,
            "instructions": result.instructions[0], "per_type": per_type, "layers": rows, "code": sizes,
            "arena": deployment.plan.arena_bytes,
            "scratch": sum(p.size for p in deployment.plan.scratch.values()),
            "macc": sum(int(get_op(n.op).macc(n)) for n in graph.nodes),
            "variants": deployment.kernels.counts(), **extra}


def _ratio(instructions: int, macc: int) -> str:
    return f"{instructions / macc:.2f}" if macc else "-"


def _versus(opt: dict, build: str) -> tuple[str, str]:
    """CMSIS-NN's ``build`` instructions and ours' difference (measured in the same run only)."""
    measured = opt.get("cmsis_nn", {})
    if not measured.get(build):
        return "-", "-"
    return f"{measured[build]:,}", f"{100 * (measured['ours'] / measured[build] - 1):+.1f} %"


def _table_instructions(rows: dict) -> list[str]:
    lines = ["| model | MACC | core | reference | optimised | CMSIS-NN default | CMSIS-NN inline asm | "
             "optimised vs inline asm | bit-exact |", "|---|---:|:---:|---:|---:|---:|---:|---:|:---:|"]
    for (model, core), pair in rows.items():
        ref, opt = pair["reference"], pair["auto"]
        default, _ = _versus(opt, "default")
        inline, versus = _versus(opt, "inline-asm")
        exact = "yes" if ref["bit_exact"] and opt["bit_exact"] and opt.get("cmsis_nn", {}).get("exact", True) \
            else "**NO**"
        lines.append(f"| {model} | {opt['macc']:,} | {core} | {ref['instructions']:,} | {opt['instructions']:,} | "
                     f"{default} | {inline} | {versus} | {exact} |")
    return lines


def _table_types(rows: dict) -> list[str]:
    lines = []
    for core in CORES:
        lines += ["", f"Instructions per MACC by layer type, {core} (summed over the models; reference -> optimised; "
                  "CMSIS-NN's per type: cmsis_nn.md):", "",
                  "| layer type | MACC | reference | optimised |", "|---|---:|---:|---:|"]
        for kind in TYPES:
            ref = [pair["reference"]["per_type"][kind] for (m, c), pair in rows.items() if c == core]
            opt = [pair["auto"]["per_type"][kind] for (m, c), pair in rows.items() if c == core]
            macc = sum(r[1] for r in ref)
            if not any(r[0] for r in ref):
                continue
            lines.append(f"| {kind} | {macc:,} | {_ratio(sum(r[0] for r in ref), macc)} | "
                         f"{_ratio(sum(o[0] for o in opt), macc)} |")
    return lines


def _table_sizes(rows: dict) -> list[str]:
    lines = ["", "Runtime kernel code the model links (text + rodata of runtime/src objects, --gc-sections, bytes) "
             "and the arena (planned, scratch included, bytes):", "",
             "| model | core | code -O2 ref / opt | code -Os ref / opt | arena ref / opt (scratch) | variants |",
             "|---|:---:|---:|---:|---:|---|"]
    for (model, core), pair in rows.items():
        ref, opt = pair["reference"], pair["auto"]
        variants = ", ".join(f"{name} {count}" for name, count in sorted(opt["variants"].items()))
        lines.append(f"| {model} | {core} | {ref['code']['-O2']:,} / {opt['code']['-O2']:,} | "
                     f"{ref['code']['-Os']:,} / {opt['code']['-Os']:,} | {ref['arena']:,} / {opt['arena']:,} "
                     f"({opt['scratch']:,}) | {variants} |")
    return lines


NOTES = ["", "Arena: the optimised variants need scratch (im2col columns, the Helium depthwise's band "
         "of kH input rows, the band path only when the whole band fits the budget below) and allow less "
         "overlap than the reference loop where they write blocks of pixels "
         "or whole output rows before the next reads (their proofs: src/mcudeploy/kernels/overlap_blocked.py). "
         "The rule that keeps the smaller kernel (src/mcudeploy/kernels/prepared.py, scratch_refusal): a variant "
         "whose scratch exceeds max(1 KiB, (input + output bytes) / 2) is refused and the next one runs (the "
         "Helium depthwise then runs its pixel path without scratch: MobileNet's last 3x3x256 layer); a fully connected layer never takes a q15 copy of its input (a K = 4000 layer needed 16 KB of "
         "scratch for 4 bytes of output and saved 2 instructions per 8 MACs). The arena difference per model is "
         "the table's; `[kernels] variant = \"reference\"` gives the reference arena.",
         "", "Code: the optimised kernels replace the reference ones in the image (the reference functions the "
         "model still calls stay, e.g. softmax, reshape); the Helium build also links the DSP variants where "
         "Helium has none."]


def write_markdown(rows: dict, arguments: str = "") -> str:
    gcc = subprocess.run(["arm-none-eabi-gcc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    qemu = subprocess.run(["qemu-system-arm", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    lines = ["# Optimised kernels (DSP extension, Helium) against the reference kernels and CMSIS-NN", "",
             f"`python benchmarks/kernels_bench.py {arguments}`".replace(" `", "`")
             + f" on {platform.machine()} ({os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the "
             f"end); {gcc}; {qemu}. "
             "M4 = target stm32h743 (DSP variants) on QEMU mps2-an386; M55 = target stm32n6 (Helium variants, "
             "DSP ones where Helium has none) on QEMU mps3-an547. Instructions per inference at -O2 through "
             "SysTick under `-icount shift=0` (resolution 40 / 31.25), one seeded random input; per layer with "
             "the profiling build. CMSIS-NN (with `--cmsis-nn PATH`, measured in this run): the same deployed "
             "network layer by layer through the functions TFLite Micro's CMSIS-NN kernels call, -O2, summed over "
             "the layers (those without a CMSIS-NN kernel at our count), bit-exact per layer; compared with the sum "
             "of our layers; '-': not measured in this run.", ""]
    lines += _table_instructions(rows) + _table_types(rows) + _table_sizes(rows) + NOTES
    return "\n".join(lines) + "\n"


def previous_rows() -> dict:
    """The rows of the last kernels.json, by (model, core)."""
    path = RESULTS / "kernels.json"
    pairs = json.loads(path.read_text()) if path.exists() else []
    return {(pair["auto"]["model"], pair["auto"]["core"]): pair for pair in pairs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=INT8_MODELS)
    parser.add_argument("--cores", nargs="*", default=list(CORES), choices=list(CORES))
    parser.add_argument("--keep", action="store_true",
                        help="keep the rows of kernels.json that this run does not measure (the others' "
                             "models / cores), and their reference measurements: only the optimised kernels "
                             "are re-run (the reference kernels did not change)")
    parser.add_argument("--from-json", action="store_true", help="rewrite kernels.md from kernels.json")
    parser.add_argument("--cmsis-nn", type=Path, help="source folder of github.com/ARM-software/CMSIS-NN: run "
                        "the optimised rows' networks on it too (both builds, in this run)")
    parser.add_argument("--cmsis-core", type=Path, help="CMSIS_6's CMSIS/Core/Include (optional)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/mcudeploy-cmsis-nn-bench"),
                        help="CMSIS-NN build folder (shared with cmsis_nn_bench.py)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    rows = previous_rows() if args.keep or args.from_json else {}
    cmsis = None
    if args.cmsis_nn and not args.from_json:
        from cmsis_nn_bench import harnesses
        cmsis = {"work": args.work, "harnesses": {core: harnesses(core, args.cmsis_nn, args.work, args.cmsis_core)
                                                  for core in args.cores}}
    if not args.from_json:
        for model in args.models:
            for core in args.cores:
                key = (Path(model).name, core)
                kept = rows.get(key) if args.keep else None
                choices = ("auto",) if kept else ("reference", "auto")
                measured = {kernels: measure(SHARED_MODELS / model, core, kernels, cmsis if kernels == "auto" else None)
                            for kernels in choices}
                rows[key] = {**(kept or {}), **measured}
                logging.error("%s %s done", model, core)
    RESULTS.mkdir(parents=True, exist_ok=True)
    text = write_markdown(rows, " ".join(sys.argv[1:]))
    (RESULTS / "kernels.md").write_text(text)
    (RESULTS / "kernels.json").write_text(json.dumps([pair for pair in rows.values()], indent=1) + "\n")
    print(text)


if __name__ == "__main__":
    main()
