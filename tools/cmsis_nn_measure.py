"""Measure Arm CMSIS-NN's int8 kernels under QEMU: the data of the ``cmsis-nn`` runtime profile.

    measure_cmsis_nn(board, checkout, build) -> measurement (the format of
    ``fit_instruction_model.py``'s samples files)

The same synthetic layers as our own kernels' fit (``instruction_samples.sample_batches``)
become cases of ``cmsis_nn_harness.c``; the harness and the CMSIS-NN sources of ``checkout``
(a clone of github.com/ARM-software/CMSIS-NN; the library is compiled and run here, not
copied into mcudeploy) are cross-compiled with ``-O2`` for the board's core -- Cortex-M4
takes the library's DSP (``SMLAD``) paths, Cortex-M55 its Helium (MVE) paths -- and run
under QEMU with ``-icount shift=0``. Each case's SysTick ticks x ns per tick = instructions.
Layers the library has no kernel for (TFLite Micro runs its reference kernels then) are
left out; the estimator uses the mcudeploy reference fit for them.

The pieces are shared with ``benchmarks/cmsis_nn_bench.py`` (a real model's layers):

    build_library(checkout, core, build, folder) -> libcmsis-nn.a (``build``: "default" or
        "inline-asm" = -DCMSIS_NN_USE_REQUANTIZE_INLINE_ASSEMBLY; reused while flags and sources match)
    build_harness(library, checkout, board, core, folder, cases=None) -> harness.elf (cases: the
        synthetic cases compiled in; None: the layer-file mode reading folder/layers.bin)
    run_harness(elf, board, folder, count) -> [(instructions, mismatching output bytes)]
"""
from __future__ import annotations

import logging
import re
import subprocess
import tempfile
from pathlib import Path

import mcudeploy.codegen.templates as template_package
from mcudeploy.codegen.boards import BOARDS, CORE_FLAGS
from mcudeploy.codegen.templates import render
from mcudeploy.estimate.features import features_of
from mcudeploy.estimate.kernel_map import cmsis_kernel, feature_family, is_depthwise
from mcudeploy.validate.qemu import ENGINE_BOARDS

log = logging.getLogger("cmsis_nn_measure")
HARNESS = Path(__file__).resolve().parent / "cmsis_nn_harness.c"
TEMPLATES = Path(template_package.__file__).parent
KINDS = {"conv": 1, "depthwise": 2, "fully_connected": 3, "add": 4, "mul": 5, "avg_pool": 6,
         "max_pool": 7, "softmax": 8, "concat": 9, "transpose": 10}
FIELDS = ("kind", "n", "h", "w", "c", "kh", "kw", "o", "stride_h", "stride_w", "pad_h", "pad_w",
          "dilation_h", "dilation_w", "out_h", "out_w", "extra", "input_offset", "output_offset", "filter_offset",
          "activation_min", "activation_max", "per_channel", "multiplier_1", "shift_1", "offset_2", "multiplier_2",
          "shift_2", "left_shift", "out_multiplier", "out_shift", "diff_min", "perm_0", "perm_1", "perm_2", "perm_3",
          "input_bytes", "input2_bytes", "filter_bytes", "bias_count", "quant_count", "output_bytes")
HARNESS_BYTES = 320 * 1024
HARNESS_CHANNELS = 2048
FULL_RANGE = {"activation_min": -128, "activation_max": 127}
# The fixed quantization of the synthetic cases (valid values; the counts hardly depend on them).
SYNTHETIC = {
    KINDS["conv"]: {"input_offset": 3, "output_offset": -2, **FULL_RANGE},
    KINDS["depthwise"]: {"input_offset": 3, "output_offset": -2, **FULL_RANGE},
    KINDS["fully_connected"]: {"input_offset": 3, "filter_offset": 0, "output_offset": -2, **FULL_RANGE},
    KINDS["add"]: {"input_offset": 3, "multiplier_1": 1300000000, "shift_1": -1, "offset_2": -5,
                   "multiplier_2": 1100000000, "shift_2": 0, "left_shift": 20, "output_offset": -2,
                   "out_multiplier": 1500000000, "out_shift": -20, **FULL_RANGE},
    KINDS["mul"]: {"input_offset": 3, "offset_2": -5, "output_offset": -2, "out_multiplier": 1500000000,
                   "out_shift": -8, **FULL_RANGE},
    KINDS["avg_pool"]: FULL_RANGE, KINDS["max_pool"]: FULL_RANGE,
    KINDS["softmax"]: {"multiplier_1": 1518500250, "shift_1": 22, "diff_min": -248},
}
BUILDS = {"default": (), "inline-asm": ("-DCMSIS_NN_USE_REQUANTIZE_INLINE_ASSEMBLY",)}


def _window_case(node, kind: str) -> dict:
    x, out = node.inputs[0], node.outputs[0]
    attrs = node.attrs
    if kind in ("conv", "depthwise"):
        kh, kw = node.inputs[1].shape[1:3]
        dilation = attrs["dilations"]
    else:
        kh, kw = attrs["kernel_shape"]
        dilation = (1, 1)
    return {"kind": KINDS[kind], "n": x.shape[0], "h": x.shape[1], "w": x.shape[2], "c": x.shape[3],
            "kh": kh, "kw": kw, "o": out.shape[3], "stride_h": attrs["strides"][0],
            "stride_w": attrs["strides"][1], "pad_h": attrs["pads"][0], "pad_w": attrs["pads"][1],
            "dilation_h": dilation[0], "dilation_w": dilation[1], "out_h": out.shape[1], "out_w": out.shape[2]}


def case_of(node) -> dict | None:
    """The harness case of ``node`` (None: not a CMSIS-NN kernel, or its buffers are too big)."""
    x, out = node.inputs[0], node.outputs[0]
    if max(x.nbytes, out.nbytes) > HARNESS_BYTES // 2:
        return None
    if node.op == "Conv":
        case = _window_case(node, "depthwise" if is_depthwise(node) else "conv")
        return None if node.inputs[1].nbytes > HARNESS_BYTES else case
    if node.op in ("AveragePool", "MaxPool"):
        return _window_case(node, "avg_pool" if node.op == "AveragePool" else "max_pool")
    if node.op == "Gemm":
        depth = x.shape[-1]
        return {"kind": KINDS["fully_connected"], "n": x.size // depth, "c": depth, "o": out.shape[-1]}
    if node.op in ("Add", "Mul") and node.inputs[0].shape == node.inputs[1].shape:
        n, h, w, c = ((1,) * 4 + tuple(out.shape))[-4:]
        return {"kind": KINDS[node.op.lower()], "n": n, "h": h, "w": w, "c": c}
    if node.op == "Softmax":
        return {"kind": KINDS["softmax"], "c": out.shape[-1], "extra": out.size // out.shape[-1]}
    if node.op == "Concat" and len({v.shape for v in node.inputs}) == 1 and node.attrs["axis"] % out.rank == 3:
        n, h, w, c = node.inputs[0].shape
        return {"kind": KINDS["concat"], "n": n, "h": h, "w": w, "c": c, "extra": len(node.inputs)}
    return None


def case_row(case: dict) -> list[int]:
    """The int32 fields of ``case`` in the harness's order (synthetic quantization by default)."""
    full = {**SYNTHETIC.get(case["kind"], {}), **case}
    return [int(full.get(name, 0)) for name in FIELDS]


def _cases_header(cases: list[dict]) -> str:
    rows = ["    {" + ", ".join(map(str, case_row(case))) + "}," for case in cases]
    return "static const harness_case harness_cases[] = {\n" + "\n".join(rows) + "\n};\n"


def _sources(checkout: Path) -> list[Path]:
    """The library's int8 sources (float kernels are left out: not measured, need FP16)."""
    return sorted(p for p in (checkout / "Source").rglob("*.c") if not re.search(r"_f(16|32)\.c$", p.name))


def build_library(checkout: Path, core: str, build: str, folder: Path, *, core_include: Path | None = None,
                  optimise: str = "-O2") -> Path:
    """Compile the library of ``checkout`` for ``core`` in ``build`` (a :data:`BUILDS` name) into
    ``folder/libcmsis-nn.a``, reused while the flags and the sources are the same."""
    flags = [*CORE_FLAGS[core].split(), optimise, "-ffunction-sections", "-fdata-sections", *BUILDS[build],
             f"-I{checkout / 'Include'}", *([f"-I{core_include}"] if core_include else [])]
    sources = _sources(checkout)
    stamp = "\n".join([*flags, *(f"{p} {p.stat().st_mtime_ns}" for p in sources)])
    library = folder / "libcmsis-nn.a"
    if library.is_file() and (folder / "stamp").is_file() and (folder / "stamp").read_text() == stamp:
        return library
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.o"):
        old.unlink()
    log.info("compiling %d CMSIS-NN sources for %s (%s)", len(sources), core, build)
    subprocess.run(["arm-none-eabi-gcc", *flags, "-c", *map(str, sources)], check=True, capture_output=True,
                   text=True, cwd=folder)
    library.unlink(missing_ok=True)
    subprocess.run(["arm-none-eabi-ar", "rcs", str(library), *sorted(map(str, folder.glob("*.o")))], check=True)
    (folder / "stamp").write_text(stamp)
    return library


def build_harness(library: Path, checkout: Path, board_name: str, core: str, folder: Path, *,
                  cases: list[dict] | None = None, optimise: str = "-O2") -> Path:
    """Link the harness: the synthetic ``cases`` compiled in, or (None) the layer-file mode."""
    board = BOARDS[board_name]
    folder.mkdir(parents=True, exist_ok=True)
    mode = ["-DHARNESS_LAYER_FILE"] if cases is None else []
    if cases is not None:
        (folder / "cases.h").write_text(_cases_header(cases))
    (folder / "board.ld").write_text(render("boards/board.ld.j2", {**board.__dict__, "board": board.name}))
    (folder / "startup.c").write_text((TEMPLATES / "boards" / "startup_cortex_m.c").read_text())
    elf = folder / "harness.elf"
    command = ["arm-none-eabi-gcc", *CORE_FLAGS[core].split(), optimise, "-ffunction-sections", "-fdata-sections",
               *mode, f"-I{checkout / 'Include'}", f"-I{folder}", str(HARNESS), str(folder / "startup.c"),
               str(library), "--specs=rdimon.specs", "-nostartfiles", "-T", str(folder / "board.ld"),
               "-Wl,--gc-sections", "-o", str(elf)]
    subprocess.run(command, check=True, capture_output=True, text=True, cwd=folder)
    return elf


def run_harness(elf: Path, board_name: str, folder: Path, count: int, timeout: float = 3600) -> list[tuple[int, int]]:
    """Run ``elf`` under QEMU in ``folder`` (where its layers.bin is): per case (instructions or
    a negative status, output bytes that differ from the expected ones)."""
    board = BOARDS[board_name]
    run = subprocess.run(["qemu-system-arm", "-M", board.name, "-semihosting", "-nographic", "-icount", "shift=0",
                          "-monitor", "none", "-serial", "none", "-kernel", str(elf)],
                         capture_output=True, text=True, cwd=folder, timeout=timeout)
    rows = {int(i): (int(t), int(m)) for i, t, m in re.findall(r"^case (\d+) (-?\d+) (\d+)", run.stdout, re.M)}
    if len(rows) != count:
        raise RuntimeError(f"the CMSIS-NN harness printed {len(rows)} of {count} cases:\n{run.stdout[-2000:]}"
                           f"{run.stderr[-2000:]}")
    return [(int(round(rows[i][0] * board.ns_per_tick)) if rows[i][0] >= 0 else rows[i][0], rows[i][1])
            for i in range(count)]


def build_and_run(cases: list[dict], board_name: str, checkout: Path, core: str, optimise: str = "-O2",
                  build: str = "default") -> list[int]:
    """Instructions of each synthetic case (negative: the harness's refusal status)."""
    with tempfile.TemporaryDirectory(prefix="mcudeploy-cmsis-") as folder:
        work = Path(folder)
        library = build_library(checkout, core, build, work / "library", optimise=optimise)
        elf = build_harness(library, checkout, board_name, core, work, cases=cases, optimise=optimise)
        return [count for count, _ in run_harness(elf, board_name, work, len(cases))]


def measure_cmsis_nn(board: str, checkout: Path | None, build: str) -> dict:
    from instruction_samples import sample_batches
    if checkout is None or not (checkout / "Include" / "arm_nnfunctions.h").is_file():
        raise SystemExit("--cmsis-nn PATH: a checkout of github.com/ARM-software/CMSIS-NN is needed")
    helium = build == "cortex-m55"
    nodes = [(batch.graph.name, node) for batch in sample_batches() for node in batch.finish().nodes]
    chosen = [(graph, node, case) for graph, node in nodes if (case := case_of(node)) is not None]
    counts = build_and_run([case for _, _, case in chosen], ENGINE_BOARDS[board], checkout, build)
    samples = []
    for (graph, node, _case), count in zip(chosen, counts):
        kernel = cmsis_kernel(node, helium)
        if count < 0 or kernel is None:
            log.info("case %s (%s) not measured: harness status %d", node.name, node.op, count)
            continue
        samples.append({"graph": graph, "node": node.name, "op": node.op, "kernel": kernel, "variant": "cmsis-nn",
                        "features": features_of(feature_family(kernel), node), "instructions": count})
    return {"runtime": "cmsis-nn", "board": board, "build": build, "checkout": describe_checkout(checkout),
            "batches": [{"graph": "cmsis-nn cases", "samples": samples}]}


def describe_checkout(checkout: Path, commit: str | None = None) -> str:
    """``ARM-software/CMSIS-NN at <commit>``: ``commit`` as given, else the folder's git HEAD."""
    if not commit:
        try:
            commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True,
                                    text=True).stdout.strip()
        except OSError:
            commit = ""
    return f"ARM-software/CMSIS-NN at {commit or 'unknown commit'} ({checkout})"
