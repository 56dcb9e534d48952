"""Benchmark (a behaviour check): the plan JSON of every full-integer shared model is the same
before and after the C-ABI change of issue 28 (structs and scratch formulas derived from the
runtime header), on a DSP, a Helium and a Cortex-M7 target, where the optimised variants'
scratch sizes enter the plan.

Run ``python benchmarks/abi_identity_bench.py [--base COMMIT]`` (about three minutes).
Writes ``benchmarks/results/abi_identity.md``.

The base commit's ``src`` is exported with ``git archive`` into a temporary folder; both
sides run ``mcudeploy plan MODEL --target T --json FILE`` in a fresh process on the same
model, and the JSON files are compared whole (every tensor's offset, every scratch buffer,
the ledger, the kernel variants).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from paths import INT8_MODELS, REPO, RESULTS, SHARED_MODELS

TARGETS = ("mps2-an386", "mps3-an547", "stm32h743")
DEFAULT_BASE = "31520b3"   # the commit the abi branch started from


def export_source(commit: str, folder: Path) -> Path:
    """The ``src`` tree of ``commit`` in ``folder`` (read from git, nothing checked out)."""
    archive = folder / "base.tar"
    subprocess.run(["git", "archive", "--format=tar", "-o", str(archive), commit, "src"], cwd=REPO, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(folder / "base", filter="data")
    return folder / "base" / "src"


def plan_json(source: Path, model: Path, target: str, output: Path) -> dict:
    environment = {**os.environ, "PYTHONPATH": str(source), "PYTHONDONTWRITEBYTECODE": "1"}
    subprocess.run([sys.executable, "-m", "mcudeploy", "plan", str(model), "--target", target, "--json", str(output)],
                   env=environment, check=True, capture_output=True, text=True, cwd=output.parent)
    return json.loads(output.read_text(encoding="utf-8"))


def compare(base_source: Path, folder: Path) -> list[dict]:
    rows = []
    for name in INT8_MODELS:
        for target in TARGETS:
            model = SHARED_MODELS / name
            before = plan_json(base_source, model, target, folder / "before.json")
            after = plan_json(REPO / "src", model, target, folder / "after.json")
            rows.append({"model": name, "target": target, "identical": before == after,
                         "scratch": sum(int(p["size"]) for p in after.get("scratch", {}).values()),
                         "variants": ", ".join(f"{variant} x{count}" for variant, count
                                               in sorted(after["kernel_variants"].items()))})
            logging.info("%s on %s: %s", name, target, "identical" if rows[-1]["identical"] else "DIFFERENT")
    return rows


def write_report(rows: list[dict], base: str, command: str) -> Path:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout
    load = os.getloadavg()
    lines = ["# Plan JSON before / after the C ABI from the header (issue 28)", "",
             f"Command: `{command}`  ", f"Base commit: {base}; this commit: {head.strip()}  ",
             f"Python {platform.python_version()}, {platform.platform()}; load average at the end "
             f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", "",
             f"**{sum(r['identical'] for r in rows)} of {len(rows)} plans identical.**", "",
             "| model | target | plan JSON | scratch bytes (planned) | kernel variants |",
             "|---|---|---|---:|---|"]
    lines += [f"| {r['model']} | {r['target']} | {'identical' if r['identical'] else 'DIFFERENT'} | "
              f"{r['scratch']} | {r['variants']} |" for r in rows]
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / "abi_identity.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=DEFAULT_BASE, help="commit to compare with (default %(default)s)")
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        rows = compare(export_source(arguments.base, folder), folder)
    command = "python benchmarks/abi_identity_bench.py" + (f" --base {arguments.base}"
                                                         if arguments.base != DEFAULT_BASE else "")
    logging.info("wrote %s", write_report(rows, arguments.base, command))


if __name__ == "__main__":
    main()
