"""Model files and the allocation CSV on hostile input (issue 26, findings 19 and 20): a special
file as the model, a CSV field over the csv module's limit, a bool tensor through MaxPool, a
model file name that is matplotlib mathtext."""
from __future__ import annotations

import os
import shutil

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from conftest import shared_model
from mcudeploy.cli.main import main


def _one_error_line(capsys, *words: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mcudeploy: error:"), err
    for word in words:
        assert word in err, err
    return err


@pytest.mark.parametrize("model", ["/proc/self/mem", "/dev/zero", "fifo"])
def test_a_special_file_as_the_model_is_one_error_line(tmp_path, capsys, model):
    if model == "fifo":
        model = str(tmp_path / "model.tflite")
        os.mkfifo(model)
    for recording in (["--no-record"], ["--runs", str(tmp_path / "runs.sqlite")]):   # the run hashes the model
        assert main(["analyze", model, *recording]) == 2
        _one_error_line(capsys, model)


def test_proc_mem_as_the_project_model_is_one_error_line(tmp_path, capsys):
    project = tmp_path / "mcudeploy.toml"
    project.write_text('[project]\nmodel = "/proc/self/mem"\n[deployment.target]\nname = "stm32h743"\n')
    assert main(["deploy", str(project), "--quiet", "--runs", str(tmp_path / "runs.sqlite")]) == 2
    _one_error_line(capsys, "[project] model", "cannot read it")


def test_a_csv_field_over_the_csv_limit_is_one_error_line(tmp_path, capsys):
    path = tmp_path / "buffers.csv"
    path.write_text("id,lower,upper,size\n1,0,1," + "9" * (200 << 10) + "\n")
    assert main(["plan", "--allocation-csv", str(path), "--no-record"]) == 7
    _one_error_line(capsys, f"{path}:2", "131,072 characters")


def _bool_max_pool(folder):
    x = helper.make_tensor_value_info("x", TensorProto.BOOL, [1, 1, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.BOOL, [1, 1, 2, 2])
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], name="pool")
    model = helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 13)])
    path = folder / "bool_pool.onnx"
    onnx.save(model, path)
    data = folder / "x.npy"
    np.save(data, np.random.default_rng(0).random((1, 1, 4, 4)) > 0.5)
    return path, data


@pytest.mark.parametrize("command", ["run", "quantize"])
def test_a_bool_tensor_through_max_pool_is_one_error_line(tmp_path, capsys, command):
    model, data = _bool_max_pool(tmp_path)
    argv = (["run", str(model), "--inputs", str(data), "-o", str(tmp_path / "y.npz")] if command == "run" else
            ["quantize", str(model), "--calib", str(data), "-o", str(tmp_path / "q.onnx")])
    code = main([*argv, "--no-record"])
    assert code not in (0, None)
    _one_error_line(capsys, "'pool'", "bool")


def test_a_mathtext_model_name_in_the_plan_picture(tmp_path, capsys):
    model = tmp_path / "in_math$x^$.tflite"
    shutil.copy(shared_model("mlperf_tiny/resnet8_int8.tflite"), model)
    picture = tmp_path / "timeline.png"
    assert main(["plan", str(model), "--target", "stm32h743", "--png", str(picture), "--no-record"]) == 0
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
