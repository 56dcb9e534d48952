"""Every full-integer shared model, generated as C and run in three places -- host (ASan +
UBSan), QEMU Cortex-M4 (mps2-an386) and QEMU Cortex-M55 (mps3-an547) -- must equal the
integer reference executor (itself bit-exact with TFLite Micro) byte for byte, on a few
random inputs each. The emulator runs also report instructions per inference, which must
be repeatable."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from conftest import INT8_MODELS, shared_model
from mcudeploy.driver import deploy
from mcudeploy.errors import UsageError
from mcudeploy.importers import load_model
from mcudeploy.validate import qemu
from mcudeploy.validate.generated_code import check_generated_code, run_generated
from test_codegen_host import random_feeds

HAVE_TOOLCHAIN = all(shutil.which(tool) for tool in qemu.TOOLS)
needs_toolchain = pytest.mark.skipif(not HAVE_TOOLCHAIN, reason="arm-none-eabi-gcc / qemu-system-arm missing: "
                                     "tools/install_toolchain.sh")


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("on", ["host", "qemu-m4", "qemu-m55"])
@pytest.mark.parametrize("model", INT8_MODELS)
def test_shared_model_bit_exact(model, on):
    graph = load_model(shared_model(model))
    check = check_generated_code(deploy(graph), random_feeds(graph, 2, seed=len(model)), on, sanitize=True)
    assert check.bit_exact, check.describe()
    if on != "host":
        assert len(check.instructions) == 2 and min(check.instructions) > 1000


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("on", ["qemu-m4", "qemu-m55"])
def test_every_kernel_family_bit_exact_on_the_boards(on):
    """The op zoo (float quantize / dequantize, resize, transpose conv scratch, ...) on the FPU cores."""
    from codegen_graphs import zoo_graph
    graph = zoo_graph()
    check = check_generated_code(deploy(graph), random_feeds(graph, 3), on)
    assert check.bit_exact, check.describe()


@pytest.mark.slow
@needs_toolchain
def test_instruction_count_is_repeatable():
    graph = load_model(shared_model("mlperf_tiny/fc_autoencoder_int8.tflite"))
    feeds = random_feeds(graph, 1)
    feeds = {name: np.concatenate([array, array]) for name, array in feeds.items()}   # same sample twice
    first = check_generated_code(deploy(graph), feeds, "qemu-m55").instructions
    second = check_generated_code(deploy(graph), feeds, "qemu-m55").instructions
    assert first[0] == first[1] == second[0] == second[1]


def test_missing_toolchain_says_how_to_install(monkeypatch):
    monkeypatch.setattr(qemu.shutil, "which", lambda tool: None if tool == "qemu-system-arm" else "/usr/bin/x")
    graph = load_model(shared_model("tflite_micro/hello_world_int8.tflite"))
    with pytest.raises(UsageError, match="qemu-system-arm not found.*tools/install_toolchain.sh"):
        run_generated(deploy(graph), random_feeds(graph, 1), "qemu-m4")


def test_generated_code_refuses_float_models():
    float_graph = load_model(shared_model("tflite_micro/hello_world_float.tflite"))
    with pytest.raises(UsageError, match="full-integer"):
        run_generated(deploy(float_graph), random_feeds(float_graph, 1), "qemu-m55")


def test_cli_validate_on_host_and_run_engine(tmp_path, capsys):
    from mcudeploy.cli.main import main as cli_main
    float_model = shared_model("tflite_micro/hello_world_float.tflite")
    int_model = shared_model("tflite_micro/hello_world_int8.tflite")
    code = cli_main(["validate", str(float_model), "--quantized", str(int_model), "--samples", "4", "--on", "host"])
    assert code in (0, 9)                     # the metrics may pass or fail; the C check must not
    assert "generated C code on host: bit-exact against the integer reference (4 samples)" in capsys.readouterr().out
    inputs = tmp_path / "x.npy"
    np.save(inputs, np.arange(-6, 6, dtype=np.int8).reshape(12, 1, 1))
    for engine in ("c-host", "int"):
        assert cli_main(["run", str(int_model), "--inputs", str(inputs), "-o", str(tmp_path / f"{engine}.npz"),
                         "--engine", engine]) == 0
    c_out, int_out = np.load(tmp_path / "c-host.npz"), np.load(tmp_path / "int.npz")
    assert all(np.array_equal(c_out[k], int_out[k]) for k in int_out.files)
