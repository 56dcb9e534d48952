"""The lean core install: with every extra's package absent (blocked in the process), analyze,
plan, generate and quantize still work, and each command that needs an extra says so in one
line naming it; pyproject.toml's extras are the ones mcudeploy.extras names."""
from __future__ import annotations

import subprocess
import sys
import tomllib

import numpy as np
import pytest

from conftest import REPO, SHARED, shared_model
from mcudeploy.extras import EXTRAS

BLOCKED = ["onnxruntime", "matplotlib", "ortools", "distributed", "dask", "PIL", "h5py"]
RUNNER = ("import sys; [sys.modules.__setitem__(m, None) for m in {blocked!r}]; "
          "from mcudeploy.cli.main import main; sys.exit(main(sys.argv[1:]))")


def lean(*arguments: str, cwd=None) -> subprocess.CompletedProcess:
    """``mcudeploy ARGUMENTS`` in a process where no extra's package can be imported."""
    return subprocess.run([sys.executable, "-c", RUNNER.format(blocked=BLOCKED), *arguments],
                          capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={"PYTHONPATH": str(REPO / "src"), "MCUDEPLOY_NO_RECORD": "1",
                               "PATH": "/usr/bin:/bin", "MCUDEPLOY_SHARED": str(SHARED)})


def test_pyproject_extras_are_the_ones_the_code_names():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    for name, (_, requirement) in EXTRAS.items():
        assert any(entry.startswith(requirement) for entry in extras[name]), name
    core = " ".join(project["dependencies"])
    assert not any(requirement.split("[")[0] in core for _, requirement in EXTRAS.values())
    assert set(extras["all"][0].split("[")[1].rstrip("]").split(",")) >= set(EXTRAS)


@pytest.mark.slow
def test_core_commands_work_without_any_extra(tmp_path):
    model = shared_model("mlperf_tiny/resnet8_int8.tflite")
    for arguments in (["analyze", str(model)], ["plan", str(model), "--target", "stm32h743"],
                      ["generate", str(model), "--target", "stm32h743", "-o", str(tmp_path / "code")]):
        result = lean(*arguments)
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
    calib = tmp_path / "calib.npz"
    np.savez(calib, input=np.random.default_rng(0).normal(size=(4, 1, 49, 10)).astype(np.float32))
    result = lean("quantize", str(REPO / "examples" / "kws_cnn.onnx"), "--calib", str(calib),
                  "-o", str(tmp_path / "q.onnx"))
    assert result.returncode == 0, result.stderr
    named = [line for line in result.stderr.splitlines() if "mcudeploy[calib]" in line]
    assert len(named) == 1 and "numpy" in named[0], result.stderr   # the numpy forward, said once


@pytest.mark.parametrize("arguments, extra", [
    (["plan", "{model}", "--target", "stm32h743", "--png", "{tmp}/m.png"], "plot"),
    (["plan", "--allocation-csv", "{csv}", "--capacity", "1000", "--allocator", "exact", "-o", "{tmp}/o.csv"], "exact"),
    (["sweep", "{example}", "--out", "{tmp}/out.json"], "sweep"),
    (["quantize", "{kws}", "--calib", "{images}", "-o", "{tmp}/q.onnx"], "images"),
])
def test_a_command_needing_an_absent_extra_says_which(tmp_path, arguments, extra):
    csv = tmp_path / "a.csv"
    csv.write_text("id,lower,upper,size\n0,0,2,10\n1,1,3,20\n")
    images = tmp_path / "images"
    images.mkdir()
    (images / "a.ppm").write_bytes(b"P6 4 4 255\n" + bytes(48))
    filled = [a.format(model=shared_model("mlperf_tiny/resnet8_int8.tflite"), tmp=tmp_path, csv=csv,
                       example=REPO / "examples" / "sweep.toml", kws=REPO / "examples" / "kws_cnn.onnx",
                       images=images) for a in arguments]
    result = lean(*filled, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("mcudeploy: error:")]
    assert len(lines) == 1 and f"pip install 'mcudeploy[{extra}]'" in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_a_wheel_carries_every_runtime_source_file():
    """``pip install mcudeploy`` (not editable) takes the C runtime from the wheel's data files
    (share/mcudeploy/runtime): every file of runtime/include and runtime/src, subfolders (the
    DSP and Helium variants) included, must be listed there, or generate fails after install."""
    data_files = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    shipped = {path.relative_to(REPO) for patterns in data_files.values() for pattern in patterns
               for path in REPO.glob(pattern)}
    runtime = {path.relative_to(REPO) for folder in ("runtime/include", "runtime/src")
               for path in (REPO / folder).rglob("*") if path.is_file() and path.suffix in (".c", ".h")}
    assert runtime - shipped == set()
    for destination, patterns in data_files.items():   # each file lands in the folder it came from
        assert all(destination.endswith(pattern.rsplit("/", 1)[0]) for pattern in patterns)
