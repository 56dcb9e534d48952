"""The README's deployment walk-through runs as written, on the bundled example model:
every command exits 0 (the QEMU step needs the Cortex-M toolchain, as CI has)."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]


def walkthrough_commands(after: str = "A whole deployment") -> list[str]:
    """The commands of the first ``sh`` block after the text ``after`` in the README."""
    text = (REPO / "README.md").read_text()
    block = text.split(after, 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.strip().splitlines() if line.strip()]


def run_readme_command(command: str, folder: Path) -> subprocess.CompletedProcess:
    argv = shlex.split(command)
    assert argv[0] == "mcudeploy"
    return subprocess.run([sys.executable, "-m", "mcudeploy", *argv[1:]], cwd=folder,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_readme_walkthrough_runs_on_the_example(tmp_path):
    if shutil.which("qemu-system-arm") is None and os.environ.get("CI") != "true":
        pytest.skip("qemu-system-arm missing: bash tools/install_toolchain.sh")
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "calib.npz", input=rng.normal(0, 1, (120, 1, 1, 49, 10)).astype(np.float32))
    np.savez(tmp_path / "val.npz", input=rng.normal(0, 1, (8, 1, 1, 49, 10)).astype(np.float32))
    np.save(tmp_path / "val_labels.npy", rng.integers(0, 12, 8))
    shutil.copy(REPO / "examples" / "kws_cnn.onnx", tmp_path / "model.onnx")
    commands = walkthrough_commands()
    assert [c.split()[1] for c in commands] == ["analyze", "lint", "quantize", "validate", "plan",
                                                "generate", "validate"]
    for command in commands:
        proc = run_readme_command(command, tmp_path)
        # The labels are random, so accuracy itself means nothing here; what validate checks
        # is that float and int8 agree (cosine, top-k, accuracy drop), and they must.
        assert proc.returncode == 0, f"{command}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert (tmp_path / "firmware" / "network" / "network.c").is_file()
    assert (tmp_path / "memory.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_readme_init_and_deploy_run_on_the_example(tmp_path):
    """The one-command block: init with the walk-through's own files (the labels included, so
    deploy's row has the accuracy), then deploy, every stage ok."""
    if shutil.which("qemu-system-arm") is None and os.environ.get("CI") != "true":
        pytest.skip("qemu-system-arm missing: bash tools/install_toolchain.sh")
    commands = walkthrough_commands("The same procedure as one recorded")
    assert [c.split()[1] for c in commands] == ["init", "deploy", "runs"]
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "calib.npz", input=rng.normal(0, 1, (60, 1, 1, 49, 10)).astype(np.float32))
    np.savez(tmp_path / "val.npz", input=rng.normal(0, 1, (8, 1, 1, 49, 10)).astype(np.float32))
    shutil.copy(REPO / "examples" / "kws_cnn.onnx", tmp_path / "model.onnx")
    with np.load(tmp_path / "val.npz") as data:
        from mcudeploy.importers import load_model
        from mcudeploy.reference import run_float
        graph = load_model(tmp_path / "model.onnx")
        labels = [next(iter(run_float(graph, {"input": sample}).values())).argmax() for sample in data["input"]]
    np.save(tmp_path / "val_labels.npy", np.array(labels))    # the float model's classes: the accuracy is known
    for command in commands[:2]:
        proc = run_readme_command(command, tmp_path)
        assert proc.returncode == 0, f"{command}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert 'labels = "val_labels.npy"' in (tmp_path / "mcudeploy.toml").read_text()
    results = " ".join(proc.stdout.split("results:", 1)[1].split("report:", 1)[0].split())   # unwrapped
    assert re.search(r"; accuracy \d+\.\d%;", results), results
    assert (tmp_path / "deploy" / "report.html").is_file()
