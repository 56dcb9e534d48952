"""The generated example (main.c) under QEMU, which does not model the DWT cycle counter:
it must count with SysTick and say so, never print "0 cycles per inference". The model is
the bundled example quantized with integer I/O (``quantize --int8-io``), as a new user would."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mcudeploy.cli.main import main
from mcudeploy.validate import qemu

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "kws_cnn.onnx"
needs_toolchain = pytest.mark.skipif(not all(shutil.which(tool) for tool in qemu.TOOLS),
                                     reason="arm-none-eabi-gcc / qemu-system-arm missing: tools/install_toolchain.sh")


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("board", ["mps2-an386", "mps3-an547"])
def test_example_counts_cycles_with_systick_under_qemu(tmp_path, monkeypatch, board):
    monkeypatch.setenv("MCUDEPLOY_NO_RECORD", "1")
    calibration = tmp_path / "calib.npz"
    np.savez(calibration, input=np.random.default_rng(0).normal(0, 1, (6, 1, 1, 49, 10)).astype(np.float32))
    assert main(["quantize", str(EXAMPLE), "--calib", str(calibration), "--int8-io",
                 "-o", str(tmp_path / "q.onnx")]) == 0
    assert main(["generate", str(tmp_path / "q.onnx"), "-o", str(tmp_path / "c")]) == 0
    run = subprocess.run(["make", "-s", "qemu", f"BOARD={board}"], cwd=tmp_path / "c",
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    found = re.search(r"(\d+) cycles per inference \(counted with SysTick", run.stdout)
    assert found, run.stdout
    assert int(found.group(1)) > 10_000          # the model has 322 k MACC
