"""The core install alone (issue 28): ``pip install mcudeploy`` in a fresh venv, no extras.

    python benchmarks/lean_install_bench.py [--keep DIR] [--repeats 5]

Creates a venv (``python3 -m venv``), installs this checkout with no extras (``pip install
REPO``; the core dependencies come from the package index), then records:

* the install: wall time, the distributions pip brought, the size of site-packages
  (``du``-style sum of file sizes) and of the mcudeploy package alone;
* start-up: ``import mcudeploy`` and ``mcudeploy plan --help``, the median of ``--repeats``
  fresh processes each;
* the lean commands on a shared model (``analyze``, ``plan``, ``generate``, and ``quantize``
  of a float model on .npz data): exit code and wall time;
* each extra's command (sweep, plot, exact, calib, images) with the extra absent: exit code
  and whether stderr / stdout has one line naming the extra (``mcudeploy[EXTRA]``).

Writes benchmarks/results/lean_install.md (versions, the command, the machine load).
"""
from __future__ import annotations

import argparse
import datetime
import logging
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from paths import REPO, RESULTS, SHARED_MODELS

logger = logging.getLogger("lean_install_bench")
INT8_MODEL = SHARED_MODELS / "mlperf_tiny" / "resnet8_int8.tflite"
FLOAT_MODEL = SHARED_MODELS / "mlperf_tiny" / "fc_autoencoder_float.tflite"
TARGET = "stm32h743"
EXTRA_MODULES = {"calib": "onnxruntime", "plot": "matplotlib", "exact": "ortools", "sweep": "distributed",
                 "images": "PIL", "keras": "h5py", "board": "serial"}
TIMEOUT = 900


def run(command: list[str], cwd: Path, timeout: float = TIMEOUT) -> tuple[int, str, float]:
    """``(exit code, stderr + stdout, seconds)`` of one process (stdout last: its result)."""
    start = time.perf_counter()
    environment = {**os.environ, "MCUDEPLOY_NO_RECORD": "1", "PYTHONPATH": ""}
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=environment)
    return done.returncode, done.stderr + done.stdout, time.perf_counter() - start


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())


def install(work: Path) -> dict[str, object]:
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    code, output, seconds = run([str(python), "-m", "pip", "install", "--no-cache-dir", "--quiet", str(REPO)], work)
    if code != 0:
        raise SystemExit(f"pip install {REPO} failed:\n{output[-4000:]}")
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    frozen = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True,
                            check=True).stdout.split()
    absent = {extra: not (site / module).exists() for extra, module in EXTRA_MODULES.items()}
    return {"python": python, "bin": venv / "bin", "seconds": seconds, "site_bytes": folder_bytes(site),
            "package_bytes": folder_bytes(site / "mcudeploy"), "distributions": frozen, "extras_absent": absent}


def median_seconds(command: list[str], cwd: Path, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        code, output, seconds = run(command, cwd)
        if code != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{output[-2000:]}")
        times.append(seconds)
    return statistics.median(times)


def import_seconds(python: Path, cwd: Path, repeats: int) -> float:
    """In-process time of ``import mcudeploy`` (the interpreter's own start excluded)."""
    script = "import time; t = time.perf_counter(); import mcudeploy; print(time.perf_counter() - t)"
    values = []
    for _ in range(repeats):
        code, output, _ = run([str(python), "-c", script], cwd)
        if code != 0:
            raise SystemExit(f"import mcudeploy failed:\n{output[-2000:]}")
        values.append(float(output.split()[-1]))
    return statistics.median(values)


def data_files(work: Path) -> dict[str, Path]:
    """Calibration data for the float model (.npz), an image folder, an allocation problem, a sweep file."""
    rng = np.random.default_rng(0)
    npz = work / "calib.npz"
    np.savez(npz, rng.uniform(-1, 1, (8, 1, 640)).astype(np.float32))
    images = work / "images"
    images.mkdir(exist_ok=True)
    (images / "a.ppm").write_bytes(b"P6 4 4 255\n" + bytes(48))
    csv = work / "problem.csv"
    csv.write_text("id,lower,upper,size\n0,0,2,64\n1,1,3,64\n2,2,4,32\n", encoding="utf-8")
    sweep = work / "sweep.toml"
    sweep.write_text(f'[sweep]\nname = "lean"\nstages = ["plan"]\n\n[axes]\nmodels = ["{INT8_MODEL}"]\n'
                     f'targets = ["{TARGET}"]\n', encoding="utf-8")
    return {"npz": npz, "images": images, "csv": csv, "sweep": sweep}


def lean_commands(work: Path, files: dict[str, Path]) -> dict[str, list[str]]:
    model = str(INT8_MODEL)
    return {"analyze": ["analyze", model],
            "plan": ["plan", model, "--target", TARGET],
            "generate": ["generate", model, "--target", TARGET, "-o", str(work / "firmware")],
            "quantize (.npz, numpy forward)": ["quantize", str(FLOAT_MODEL), "--calib", str(files["npz"]),
                                               "-o", str(work / "q.onnx")]}


def extra_commands(work: Path, files: dict[str, Path]) -> dict[str, list[str]]:
    model = str(INT8_MODEL)
    return {"sweep": ["sweep", str(files["sweep"]), "--out", str(work / "sweep.json")],
            "plot": ["plan", model, "--target", TARGET, "--png", str(work / "timeline.png")],
            "exact": ["plan", "--allocation-csv", str(files["csv"]), "--capacity", "1K", "--allocator", "exact"],
            "calib": ["quantize", str(FLOAT_MODEL), "--calib", str(files["npz"]), "-o", str(work / "q2.onnx")],
            "images": ["quantize", str(FLOAT_MODEL), "--calib", str(files["images"]), "-o", str(work / "q3.onnx")]}


def naming_lines(output: str, extra: str) -> list[str]:
    return [line for line in output.splitlines() if f"mcudeploy[{extra}]" in line]


def measure(work: Path, repeats: int) -> dict[str, object]:
    installed = install(work)
    executable = str(Path(installed["bin"]) / "mcudeploy")  # type: ignore[arg-type]
    files = data_files(work)
    figures: dict[str, object] = dict(installed)
    figures["import_s"] = import_seconds(Path(installed["python"]), work, repeats)  # type: ignore[arg-type]
    figures["plan_help_s"] = median_seconds([executable, "plan", "--help"], work, repeats)
    lean = {}
    for name, arguments in lean_commands(work, files).items():
        code, output, seconds = run([executable, *arguments], work)
        lean[name] = (code, seconds, next((line for line in output.splitlines()[::-1] if any(c.isalnum() for c in line)), ""))
    figures["lean"] = lean
    figures["generated_files"] = sum(1 for path in (work / "firmware").rglob("*") if path.is_file())
    extras = {}
    for extra, arguments in extra_commands(work, files).items():
        code, output, seconds = run([executable, *arguments], work)
        extras[extra] = (code, naming_lines(output, extra), seconds, output.strip().splitlines()[-1:])
    figures["extras"] = extras
    return figures


def machine_load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def report(figures: dict[str, object], command: str, load: str) -> list[str]:
    lean: dict = figures["lean"]  # type: ignore[assignment]
    extras: dict = figures["extras"]  # type: ignore[assignment]
    absent: dict = figures["extras_absent"]  # type: ignore[assignment]
    lines = ["# The lean install (issue 28)", "",
             f"Command: `{command}`; {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
             f"Python {platform.python_version()} on {platform.machine()}; {load} before the run.", "",
             "`pip install REPO` (no extras) into a fresh `python3 -m venv`; every command run from the venv's "
             "`mcudeploy` with `MCUDEPLOY_NO_RECORD=1`.", "",
             "## Install", "",
             "| figure | value |", "|---|---|",
             f"| pip install wall time | {figures['seconds']:.1f} s (downloads included) |",
             f"| site-packages size | {figures['site_bytes'] / 2**20:.1f} MiB |",
             f"| mcudeploy package size | {figures['package_bytes'] / 2**20:.1f} MiB |",
             f"| `import mcudeploy` (in-process, median of {figures['repeats']}) | {figures['import_s'] * 1000:.0f} ms |",
             f"| `mcudeploy plan --help` (process wall, median of {figures['repeats']}) | "
             f"{figures['plan_help_s'] * 1000:.0f} ms |",
             f"| extras' packages absent | {', '.join(k for k, v in absent.items() if v)} |",
             f"| extras' packages present | {', '.join(k for k, v in absent.items() if not v) or 'none'} |", "",
             "Distributions installed: " + ", ".join(f"`{name}`" for name in figures["distributions"]) + ".",  # type: ignore[attr-defined]
             "", "## Core commands (model `mlperf_tiny/resnet8_int8.tflite`, target "
             f"`{TARGET}`; quantize on `mlperf_tiny/fc_autoencoder_float.tflite`)", "",
             "| command | exit | seconds | last line of its output |", "|---|---|---|---|"]
    lines += [f"| {name} | {code} | {seconds:.1f} | {last[:160].replace('|', '/')} |"
              for name, (code, seconds, last) in lean.items()]
    lines += ["", f"`generate` wrote {figures['generated_files']} files."]
    lines += ["", "## Commands that need an extra, with the extra absent", "",
              "| extra | exit | lines naming `mcudeploy[extra]` | the line |", "|---|---|---|---|"]
    for extra, (code, named, _, last) in extras.items():
        shown = (named[0] if named else (last[0] if last else "")).replace("|", "\\|")
        lines.append(f"| {extra} | {code} | {len(named)} | {shown[:220]} |")
    return lines


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="make the venv in DIR and keep it (default: a temporary folder)")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each start-up figure (default 5)")
    args = parser.parse_args()
    load = machine_load()
    command = "python benchmarks/lean_install_bench.py" + (f" --repeats {args.repeats}" if args.repeats != 5 else "")
    work = args.keep or Path(tempfile.mkdtemp(prefix="lean-install-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        figures = measure(work, args.repeats)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    figures["repeats"] = args.repeats
    lines = report(figures, command, load)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "lean_install.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    logger.info("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
