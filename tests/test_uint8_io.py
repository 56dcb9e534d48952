"""uint8 / float32 graph inputs and outputs end to end: the vendor model-zoo convention
(a QUANTIZE uint8 -> int8 at the entry, a DEQUANTIZE at the exit, as TFLite's converter
writes ``inference_input_type=uint8``). The uint8-in / float-out versions of the shared
full-integer models are made by ``tools/make_uint8_io_models.py`` (a flatbuffer rewrite) and
must equal TFLite Micro bit for bit on ``--engine int``, on the host C code and under QEMU;
the C runtime's uint8 edge kernels are checked on a small graph with the sanitizers; the
generated ``network.h`` describes each I/O tensor's dtype, scale and zero point."""
from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import tflite

from conftest import INT8_MODELS, shared_model
from mcudeploy.codegen import generate_files
from mcudeploy.driver import deploy
from mcudeploy.importers import load_model
from mcudeploy.ir import DType, Graph, QuantParams, verify
from mcudeploy.reference.int_executor import run_int
from mcudeploy.validate import qemu
from mcudeploy.validate.generated_code import run_generated
from mcudeploy.validate.references import tflm_interpreter, tflm_run

TOOL = Path(__file__).resolve().parents[1] / "tools" / "make_uint8_io_models.py"
HAVE_HOST = shutil.which("gcc") is not None and shutil.which("make") is not None
HAVE_TOOLCHAIN = all(shutil.which(tool) for tool in qemu.TOOLS)


def _tool():
    spec = importlib.util.spec_from_file_location("make_uint8_io_models", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_uint8_io_models", module)
    spec.loader.exec_module(module)
    return module


def _uint8_model(tmp_path: Path, relative: str) -> Path:
    path = tmp_path / _tool().output_name(Path(relative))
    path.write_bytes(_tool().uint8_float_io(shared_model(relative).read_bytes()))
    return path


def _bits(array: np.ndarray) -> np.ndarray:
    array = np.asarray(array)
    return array.view(np.uint32) if array.dtype == np.float32 else array


def test_rewrite_adds_the_converter_edges(tmp_path):
    """QUANTIZE first (uint8 input, same scale, zero point + 128), DEQUANTIZE last (float32
    output), the model's names on the new tensors; the rest unchanged."""
    source = shared_model("mlperf_tiny/dscnn_kws_int8.tflite")
    path = _uint8_model(tmp_path, "mlperf_tiny/dscnn_kws_int8.tflite")
    before, after = (tflite.Model.GetRootAs(p.read_bytes(), 0).Subgraphs(0) for p in (source, path))
    assert after.OperatorsLength() == before.OperatorsLength() + 2
    old_input, new_input = before.Tensors(before.Inputs(0)), after.Tensors(after.Inputs(0))
    assert new_input.Type() == tflite.TensorType.UINT8 and new_input.Name() == old_input.Name()
    assert new_input.Quantization().Scale(0) == old_input.Quantization().Scale(0)
    assert new_input.Quantization().ZeroPoint(0) == old_input.Quantization().ZeroPoint(0) + 128
    assert after.Tensors(after.Outputs(0)).Type() == tflite.TensorType.FLOAT32
    graph = load_model(path)
    assert graph.inputs[0].dtype == DType.UINT8 and graph.outputs[0].dtype == DType.FLOAT32
    assert graph.nodes[0].op == "QuantizeLinear" and graph.nodes[-1].op == "DequantizeLinear"


def test_unchanged_rewrite_is_identical_in_tflite_micro(tmp_path):
    """Read and written again without edits, a model gives TFLite Micro's outputs exactly:
    the copy of every table (options included) is faithful."""
    tool = _tool()
    source = shared_model("mlperf_tiny/resnet8_int8.tflite")
    copy = tmp_path / "copy.tflite"
    copy.write_bytes(tool.build_flatbuffer(tool.read_flat_model(source.read_bytes())))
    samples = np.random.default_rng(1).integers(-128, 128, (2, 1, 32, 32, 3)).astype(np.int8)
    assert np.array_equal(tflm_run(tflm_interpreter(source), samples), tflm_run(tflm_interpreter(copy), samples))


def edge_graph() -> Graph:
    """Every uint8 / float edge kernel: u8 -> s8 -> u8 and -> f32, u8 -> f32, f32 -> u8."""
    graph = Graph("uint8_edges")
    pixels = graph.add_input("pixels", DType.UINT8, (1, 4, 4, 3), quant=QuantParams(np.array([0.05]), np.array([131])))
    real = graph.add_input("real", DType.FLOAT32, (1, 8))
    inner = graph.add_node("QuantizeLinear", [pixels], {"to": "int8"}, name="to_int8", output_names=["inner"])
    inner.outputs[0].quant = QuantParams(np.array([0.07]), np.array([-5]))
    flat = graph.add_node("Reshape", [inner.outputs[0]], {"shape": [1, 48]}, name="flatten", output_names=["flat"])
    flat.outputs[0].quant = inner.outputs[0].quant
    back = graph.add_node("QuantizeLinear", [flat.outputs[0]], {"to": "uint8"}, name="to_uint8",
                          output_names=["back"])
    back.outputs[0].quant = QuantParams(np.array([0.1]), np.array([120]))
    dequantized = graph.add_node("DequantizeLinear", [flat.outputs[0]], name="dequantize", output_names=["scores"])
    direct = graph.add_node("DequantizeLinear", [pixels], name="dequantize_uint8", output_names=["direct"])
    quantized = graph.add_node("QuantizeLinear", [real], {"to": "uint8", "rounding": "half_away_from_zero"},
                               name="quantize_uint8", output_names=["codes"])
    quantized.outputs[0].quant = QuantParams(np.array([0.02]), np.array([128]))
    graph.outputs = [back.outputs[0], dequantized.outputs[0], direct.outputs[0], quantized.outputs[0]]
    verify(graph)
    return graph


@pytest.mark.skipif(not HAVE_HOST, reason="host gcc / make not installed")
def test_uint8_edge_kernels_on_host_are_bit_exact():
    graph = edge_graph()
    rng = np.random.default_rng(2)
    feeds = {"pixels": rng.integers(0, 256, (5, 1, 4, 4, 3), endpoint=False).astype(np.uint8),
             "real": np.concatenate([rng.uniform(-4, 4, (5, 1, 6)), np.full((5, 1, 2), 0.01)], axis=2
                                    ).astype(np.float32)}   # 0.01 / 0.02: a tie, rounded away from zero
    result = run_generated(deploy(graph), feeds, "host", sanitize=True)
    reference = run_int(graph, feeds, batch=True)
    for value in graph.outputs:
        got, want = result.outputs[value.name], np.asarray(reference[value.name])
        assert got.dtype == want.dtype == value.dtype.numpy
        assert np.array_equal(_bits(got), _bits(want)), value.name
    assert len(np.unique(reference["back"])) > 20 and reference["codes"].max() == 255   # saturates


def test_network_header_describes_the_io():
    header = generate_files(deploy(edge_graph()))["network.h"]
    assert "#define NETWORK_INPUT_0_DTYPE NETWORK_DTYPE_UINT8" in header
    assert "#define NETWORK_INPUT_0_ZERO_POINT 131" in header
    assert "#define NETWORK_INPUT_1_DTYPE NETWORK_DTYPE_FLOAT32" in header
    assert "#define NETWORK_OUTPUT_1_SCALE 0.0f" in header
    assert "NETWORK_DTYPE_UINT8 = 4" in header
    line = next(text for text in header.splitlines() if text.startswith("#define NETWORK_OUTPUT_1_DTYPE"))
    assert "converted by the network from int8, scale 0.07, zero point -5" in line


@pytest.mark.slow
@pytest.mark.skipif(not (HAVE_HOST and HAVE_TOOLCHAIN), reason="gcc / arm-none-eabi-gcc / qemu-system-arm missing")
@pytest.mark.parametrize("relative", INT8_MODELS)
def test_uint8_float_models_bit_exact_with_tflite_micro(tmp_path, relative):
    """The uint8-in / float-out model on TFLite Micro, --engine int, host C and QEMU M4."""
    path = _uint8_model(tmp_path, relative)
    graph = load_model(path)
    value = graph.inputs[0]
    samples = np.random.default_rng(len(relative)).integers(0, 256, (2, *value.shape)).astype(np.uint8)
    expected = tflm_run(tflm_interpreter(path), samples)
    assert expected.dtype == np.float32
    feeds = {value.name: samples}
    output = graph.outputs[0].name
    assert np.array_equal(_bits(run_int(graph, feeds, batch=True)[output]), _bits(expected)), "int"
    deployment = deploy(graph)
    for on in ("host", "qemu-m4"):
        got = run_generated(deployment, feeds, on).outputs[output]
        assert np.array_equal(_bits(got), _bits(expected)), on


@pytest.mark.slow
@pytest.mark.skipif(not (HAVE_HOST and HAVE_TOOLCHAIN), reason="gcc / arm-none-eabi-gcc / qemu-system-arm missing")
def test_uint8_float_ssd_head_with_keras_shape_arithmetic_bit_exact(tmp_path):
    """The SSD-style head of ``test_ssd_head_end_to_end`` (``SHAPE -> STRIDED_SLICE -> PACK
    -> RESHAPE`` per box / class tensor, two outputs) rewritten to uint8-in / float-out:
    TFLite Micro, --engine int, host C and QEMU M4, every output."""
    from test_ssd_head_end_to_end import ssd_head, tflm
    path = tmp_path / "ssd_head_uint8_float.tflite"
    path.write_bytes(_tool().uint8_float_io(ssd_head()))
    graph = load_model(path)
    value = graph.inputs[0]
    assert value.dtype == DType.UINT8 and [v.dtype for v in graph.outputs] == [DType.FLOAT32] * 2
    assert not {node.op for node in graph.nodes} & {"Slice", "Unsqueeze", "Cast"}     # shapes folded
    samples = np.random.default_rng(4).integers(0, 256, (3, *value.shape)).astype(np.uint8)
    interpreter = tflm.Interpreter.from_file(str(path))
    expected = {v.name: tflm_run(interpreter, samples, index) for index, v in enumerate(graph.outputs)}
    feeds = {value.name: samples}
    results = {"int": run_int(graph, feeds, batch=True)}
    deployment = deploy(graph)
    for on in ("host", "qemu-m4"):
        results[on] = run_generated(deployment, feeds, on).outputs
    for engine, outputs in results.items():
        for name, want in expected.items():
            assert want.dtype == np.float32 and len(np.unique(want)) > 10
            assert np.array_equal(_bits(np.asarray(outputs[name])), _bits(want)), (engine, name)
