"""The README's deployment walk-through runs as written, on the bundled example model:
every command exits 0 (the QEMU step needs the Cortex-M toolchain, as CI has)."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]


def walkthrough_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    block = text.split("A whole deployment", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.strip().splitlines() if line.strip()]


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
        argv = shlex.split(command)
        assert argv[0] == "mcudeploy"
        proc = subprocess.run([sys.executable, "-m", "mcudeploy", *argv[1:]], cwd=tmp_path,
                              capture_output=True, text=True, timeout=600)
        # The labels are random, so accuracy itself means nothing here; what validate checks
        # is that float and int8 agree (cosine, top-k, accuracy drop), and they must.
        assert proc.returncode == 0, f"{command}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert (tmp_path / "firmware" / "network" / "network.c").is_file()
    assert (tmp_path / "memory.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
