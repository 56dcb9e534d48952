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
"""
from __future__ import annotations

import logging
import re
import subprocess
import tempfile
from pathlib import Path

from mcudeploy.codegen.boards import BOARDS, CORE_FLAGS
from mcudeploy.codegen.templates import render
from mcudeploy.estimate.features import features_of
from mcudeploy.estimate.kernel_map import cmsis_kernel, feature_family, is_depthwise
from mcudeploy.validate.qemu import ENGINE_BOARDS

log = logging.getLogger("cmsis_nn_measure")
HARNESS = Path(__file__).resolve().parent / "cmsis_nn_harness.c"
KINDS = {"conv": 1, "depthwise": 2, "fully_connected": 3, "add": 4, "mul": 5, "avg_pool": 6,
         "max_pool": 7, "softmax": 8, "concat": 9}
FIELDS = ("kind", "n", "h", "w", "c", "kh", "kw", "o", "stride_h", "stride_w", "pad_h", "pad_w",
          "dilation_h", "dilation_w", "out_h", "out_w", "extra")
HARNESS_BYTES = 320 * 1024


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


def _cases_header(cases: list[dict]) -> str:
    rows = ["    {" + ", ".join(str(int(case.get(name, 0))) for name in FIELDS) + "}," for case in cases]
    return "static const harness_case harness_cases[] = {\n" + "\n".join(rows) + "\n};\n"


def _sources(checkout: Path) -> list[Path]:
    """The library's int8 sources (float kernels are left out: not measured, need FP16)."""
    return sorted(p for p in (checkout / "Source").rglob("*.c") if not re.search(r"_f(16|32)\.c$", p.name))


def build_and_run(cases: list[dict], board_name: str, checkout: Path, core: str, optimise: str = "-O2") -> list[int]:
    board = BOARDS[board_name]
    with tempfile.TemporaryDirectory(prefix="mcudeploy-cmsis-") as folder:
        work = Path(folder)
        (work / "cases.h").write_text(_cases_header(cases))
        (work / "board.ld").write_text(render("boards/board.ld.j2", {**board.__dict__, "board": board.name}))
        startup = Path(__import__("mcudeploy.codegen.templates", fromlist=["x"]).__file__).parent
        (work / "startup.c").write_text((startup / "boards" / "startup_cortex_m.c").read_text())
        command = ["arm-none-eabi-gcc", *CORE_FLAGS[core].split(), optimise, "-ffunction-sections", "-fdata-sections",
                   f"-I{checkout / 'Include'}", f"-I{work}", str(HARNESS), str(work / "startup.c"),
                   *map(str, _sources(checkout)), "--specs=rdimon.specs", "-nostartfiles", "-T", str(work / "board.ld"),
                   "-Wl,--gc-sections", "-o", str(work / "harness.elf")]
        subprocess.run(command, check=True, capture_output=True, text=True, cwd=work)
        run = subprocess.run(["qemu-system-arm", "-M", board.name, "-semihosting", "-nographic", "-icount", "shift=0",
                              "-monitor", "none", "-serial", "none", "-kernel", str(work / "harness.elf")],
                             capture_output=True, text=True, cwd=work, timeout=3600)
    ticks = {int(i): int(t) for i, t in re.findall(r"^case (\d+) (-?\d+)", run.stdout, re.M)}
    if len(ticks) != len(cases):
        raise RuntimeError(f"the CMSIS-NN harness printed {len(ticks)} of {len(cases)} cases:\n{run.stdout[-2000:]}"
                           f"{run.stderr[-2000:]}")
    return [int(round(ticks[i] * board.ns_per_tick)) if ticks[i] >= 0 else ticks[i] for i in range(len(cases))]


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
    return {"runtime": "cmsis-nn", "board": board, "build": build, "checkout": _describe(checkout),
            "batches": [{"graph": "cmsis-nn cases", "samples": samples}]}


def _describe(checkout: Path) -> str:
    try:
        commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = "unknown"
    return f"ARM-software/CMSIS-NN at {commit or 'unknown commit'}"
