"""The integer reference executor against TensorFlow Lite Micro, byte for byte.

Our executor runs each batch at once (``batch=True``); the TFLM interpreter runs the same
inputs one by one. Covered: every full-integer model in ../shared/models on 200 random
inputs each, the real inputs in ../shared/data, and all 127 int16 single-op seanet cases
against the golden outputs TFLM produced.
"""
from __future__ import annotations

import logging
import struct
from pathlib import Path

import numpy as np
import pytest

from conftest import DATA, MODELS, require, shared_file, shared_model
from mcudeploy.arithmetic import fixed_point as fp
from mcudeploy.importers import load_model
from mcudeploy.reference.int_executor import run_int
from mcudeploy.validate.references import tflm_interpreter, tflm_run

runtime = require("tflite_micro.python.tflite_micro.runtime")

SAMPLES = 200
FAST_MODELS = ["mlperf_tiny/fc_autoencoder_int8.tflite", "mlperf_tiny/streaming_wakeword_int8.tflite",
               "tflite_micro/hello_world_int8.tflite", "tflite_micro/micro_speech_int8.tflite"]
SLOW_MODELS = ["mlperf_tiny/resnet8_int8.tflite", "mlperf_tiny/dscnn_kws_int8.tflite",
               "mlperf_tiny/mobilenetv1_vww_int8.tflite", "tflite_micro/person_detect_int8.tflite"]
SEANET = MODELS / "tflite_micro" / "seanet_golden"
SEANET_CASES = sorted(str(p.relative_to(SEANET))[:-len(".tflite")] for p in SEANET.glob("*/*.tflite"))


def tflm_outputs(path: Path, batch: np.ndarray) -> np.ndarray:
    """TFLM's output 0 for every sample of ``batch`` (one invoke each)."""
    return tflm_run(tflm_interpreter(path), batch)


def random_inputs(value, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if value.dtype.is_float:
        return rng.standard_normal((count,) + value.shape).astype(np.float32)
    info = np.iinfo(value.dtype.numpy)
    return rng.integers(info.min, info.max, (count,) + value.shape, endpoint=True).astype(value.dtype.numpy)


def assert_same_as_tflm(path: Path, graph, batch: np.ndarray) -> None:
    ours = run_int(graph, {graph.inputs[0].name: batch}, batch=True)[graph.outputs[0].name]
    reference = tflm_outputs(path, batch)
    assert ours.dtype == reference.dtype
    assert ours.reshape(reference.shape).tobytes() == reference.tobytes(), (
        f"{np.count_nonzero(ours.reshape(reference.shape) != reference)} of {reference.size} "
        "outputs differ from TFLM")


@pytest.fixture(autouse=True)
def quiet_importer():
    logging.disable(logging.WARNING)  # "dynamic batch dimension" notes of the importer
    yield
    logging.disable(logging.NOTSET)


@pytest.mark.parametrize("model", FAST_MODELS + [pytest.param(m, marks=pytest.mark.slow)
                                                 for m in SLOW_MODELS])
def test_random_inputs_match_tflm(model):
    path = shared_model(model)
    graph = load_model(path)
    assert all(v.dtype.value == "int8" for v in graph.inputs + graph.outputs)  # no float edges
    assert_same_as_tflm(path, graph, random_inputs(graph.inputs[0], SAMPLES, seed=len(model)))


def read_bmp_pixels(path: Path) -> np.ndarray:
    """Pixel bytes of an 8-bit BMP in top-down row order (what PIL's ``tobytes`` gives and
    TFLM's person-detection test embeds)."""
    data = path.read_bytes()
    offset, = struct.unpack_from("<I", data, 10)
    width, height = struct.unpack_from("<ii", data, 18)
    bits, = struct.unpack_from("<H", data, 28)
    assert bits == 8, f"{path}: {bits}-bit BMP, expected 8-bit"
    stride = (width + 3) // 4 * 4
    rows = np.frombuffer(data, np.uint8, stride * abs(height), offset).reshape(abs(height), stride)
    rows = rows[:, :width]
    return rows[::-1] if height > 0 else rows


@pytest.mark.slow
def test_person_detection_images_match_tflm():
    path = shared_model("tflite_micro/person_detect_int8.tflite")
    graph = load_model(path)
    images = [read_bmp_pixels(DATA / "person_detection" / f"{name}.bmp")
              for name in ("person", "no_person")]
    batch = np.stack(images).view(np.int8).reshape((2,) + graph.inputs[0].shape)  # raw bytes
    assert_same_as_tflm(path, graph, batch)
    scores = run_int(graph, {graph.inputs[0].name: batch}, batch=True)[graph.outputs[0].name]
    assert scores.reshape(2, -1)[0].argmax() != scores.reshape(2, -1)[1].argmax()  # person vs not


def test_bmp_reader_agrees_with_pil():
    image_module = require("PIL.Image")
    path = DATA / "person_detection" / "person.bmp"
    shared_file(path)
    expected = np.frombuffer(image_module.open(path).tobytes(), np.uint8).reshape(96, 96)
    assert np.array_equal(read_bmp_pixels(path), expected)


def test_streaming_wakeword_samples_match_tflm():
    path = shared_model("mlperf_tiny/streaming_wakeword_int8.tflite")
    graph = load_model(path)
    specs = np.load(DATA / "streaming_wakeword_samples.npz")["specs"]
    quant = graph.inputs[0].quant
    scaled = fp.round_half_away(specs.astype(np.float32) / quant.scale[0]) + quant.zero_point[0]
    batch = np.clip(scaled, -128, 127).astype(np.int8).reshape((-1,) + graph.inputs[0].shape)
    assert_same_as_tflm(path, graph, batch)


def read_csv(path: Path, value) -> np.ndarray:
    return np.loadtxt(path, delimiter=",", dtype=np.int64).reshape(value.shape).astype(value.dtype.numpy)


@pytest.mark.parametrize("case", SEANET_CASES)
def test_seanet_int16_case_matches_golden(case):
    base = SEANET / case
    graph = load_model(base.with_suffix(".tflite"))
    feeds = {value.name: read_csv(next(base.parent.glob(f"{base.name}_input{index}_*.csv")), value)
             for index, value in enumerate(graph.inputs)}
    golden_path = next(base.parent.glob(f"{base.name}_golden_*.csv"))
    golden = np.loadtxt(golden_path, delimiter=",", dtype=np.int64)
    output = run_int(graph, feeds)[graph.outputs[0].name]
    assert output.dtype.name == golden_path.stem.rsplit("_", 1)[1]  # e.g. ..._golden_int16
    assert np.array_equal(output.reshape(-1), golden.reshape(-1))


def test_all_seanet_cases_collected():
    shared_file(SEANET)
    assert len(SEANET_CASES) == 127


# -- single-op models built in code (ops the shared models do not exercise) ------------------
from tflite_builders import Op, Tensor, build_model  # noqa: E402

SAME, VALID, RELU, RELU6 = 0, 1, 1, 3
_names = iter(range(10**6))


def act(shape, dtype="int8", scale=0.05, zero_point=0) -> Tensor:
    """A runtime (activation) tensor with per-tensor quantization (no quant for float32)."""
    quant = None if dtype == "float32" else ([scale], [zero_point], 0)
    return Tensor(f"t{next(_names)}", shape, dtype, quant=quant)


def const(array, scales=None, axis=0) -> Tensor:
    array = np.asarray(array)
    quant = None if scales is None else (list(np.atleast_1d(scales)), [0] * np.size(scales), axis)
    return Tensor(f"c{next(_names)}", array.shape, str(array.dtype), data=array, quant=quant)


def weights(shape, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(-127, 128, shape).astype(np.int8)


def one_op(op, operands, output, options=None) -> bytes:
    tensors = [t for t in operands if t is not None] + [output]
    index = {id(t): i for i, t in enumerate(tensors)}
    op_inputs = [-1 if t is None else index[id(t)] for t in operands]
    graph_inputs = [index[id(t)] for t in operands if t is not None and t.data is None]
    last = len(tensors) - 1
    return build_model(tensors, [Op(op, op_inputs, [last], options or {})], graph_inputs, [last])


def _cases():
    x8, x16 = (1, 6, 7, 4), (1, 5, 6, 3)
    per_channel = list(np.linspace(0.004, 0.02, 4))
    return {
        "add_int8_broadcast_relu": ("ADD", [act(x8, scale=0.05, zero_point=-3),
                                            act((1, 1, 1, 4), scale=0.02, zero_point=4)],
                                    act(x8, scale=0.06, zero_point=-10), {"fused_activation_function": RELU}),
        "sub_int8_relu6": ("SUB", [act(x8, scale=0.05, zero_point=-3), act(x8, scale=0.03, zero_point=7)],
                           act(x8, scale=0.04, zero_point=-1), {"fused_activation_function": RELU6}),
        "mul_int8_broadcast": ("MUL", [act(x8, scale=0.05, zero_point=-3), act((4,), scale=0.02, zero_point=9)],
                               act(x8, scale=0.01, zero_point=2), {}),
        "mul_int16": ("MUL", [act(x16, "int16", 0.001), act(x16, "int16", 0.002)],
                      act(x16, "int16", 0.0015), {}),
        "logistic_int8": ("LOGISTIC", [act(x8, scale=0.08, zero_point=5)], act(x8, scale=1 / 256, zero_point=-128), {}),
        "tanh_int8": ("TANH", [act(x8, scale=0.03, zero_point=-5)], act(x8, scale=1 / 128), {}),
        "logistic_int16": ("LOGISTIC", [act(x16, "int16", 0.0003)], act(x16, "int16", 1 / 32768), {}),
        "tanh_int16": ("TANH", [act(x16, "int16", 0.0003)], act(x16, "int16", 1 / 32768), {}),
        "hard_swish_int8": ("HARD_SWISH", [act(x8, scale=0.05, zero_point=10)],
                            act(x8, scale=0.03, zero_point=-20), {}),
        "leaky_relu_int8": ("LEAKY_RELU", [act(x8, scale=0.05, zero_point=10)],
                            act(x8, scale=0.04, zero_point=-30), {"alpha": 0.2}),
        "mean_int8_hw": ("MEAN", [act(x8, scale=0.05, zero_point=3), const(np.array([1, 2], np.int32))],
                         act((1, 1, 1, 4), scale=0.02, zero_point=-7), {"keep_dims": True}),
        "mean_int16_w": ("MEAN", [act(x16, "int16", 0.001), const(np.array([2], np.int32))],
                         act((1, 5, 3), "int16", 0.0007), {"keep_dims": False}),
        "max_pool_int8_same": ("MAX_POOL_2D", [act(x8, zero_point=3)], act((1, 3, 4, 4), zero_point=3),
                               {"padding": SAME, "stride_w": 2, "stride_h": 2, "filter_width": 3,
                                "filter_height": 3}),
        "average_pool_int8_same_relu": ("AVERAGE_POOL_2D", [act(x8, zero_point=3)],
                                        act((1, 3, 4, 4), zero_point=3),
                                        {"padding": SAME, "stride_w": 2, "stride_h": 2, "filter_width": 3,
                                         "filter_height": 3, "fused_activation_function": RELU}),
        "average_pool_int16": ("AVERAGE_POOL_2D", [act(x16, "int16", 0.001)], act((1, 2, 3, 3), "int16", 0.001),
                               {"padding": VALID, "stride_w": 2, "stride_h": 2, "filter_width": 2,
                                "filter_height": 2}),
        **{f"resize_{kind}_{mode}": (
            "RESIZE_BILINEAR" if kind == "bilinear" else "RESIZE_NEAREST_NEIGHBOR",
            [act(x8, zero_point=-4), const(np.array([11, 9], np.int32))], act((1, 11, 9, 4), zero_point=-4),
            {"align_corners": mode == "align_corners", "half_pixel_centers": mode == "half_pixel"})
           for kind in ("bilinear", "nearest") for mode in ("asymmetric", "align_corners", "half_pixel")},
        "concatenation_int8": ("CONCATENATION", [act(x8, zero_point=1), act((1, 6, 7, 2), zero_point=1)],
                               act((1, 6, 7, 6), zero_point=1), {"axis": 3}),
        "pad_int8": ("PAD", [act(x8, zero_point=-17), const(np.array([[0, 0], [1, 2], [0, 3], [0, 0]], np.int32))],
                     act((1, 9, 10, 4), zero_point=-17), {}),
        "transpose_int8": ("TRANSPOSE", [act(x8), const(np.array([0, 3, 1, 2], np.int32))], act((1, 4, 6, 7)), {}),
        "strided_slice_int8": ("STRIDED_SLICE", [act(x8), const(np.array([0, 1, 6, 0], np.int32)),
                                                 const(np.array([1, 6, 0, 4], np.int32)),
                                                 const(np.array([1, 2, -2, 1], np.int32))],
                               act((1, 3, 3, 4)), {}),
        "transpose_conv_int8_same": ("TRANSPOSE_CONV", [const(np.array([1, 12, 14, 3], np.int32)),
                                                        const(weights((3, 3, 3, 4)), per_channel[:3]),
                                                        act(x8, zero_point=-6),
                                                        const(np.arange(-3, 3, 2, dtype=np.int32) * 50)],
                                     act((1, 12, 14, 3), scale=0.1, zero_point=4),
                                     {"padding": SAME, "stride_w": 2, "stride_h": 2}),
        "quantize_float_to_int8": ("QUANTIZE", [act(x8, "float32")], act(x8, scale=0.02, zero_point=-5), {}),
        "quantize_int8_to_int8": ("QUANTIZE", [act(x8, scale=0.05, zero_point=3)], act(x8, scale=0.03, zero_point=-9), {}),
        "quantize_int16_to_int8": ("QUANTIZE", [act(x16, "int16", 0.001)], act(x16, scale=0.1, zero_point=2), {}),
        "dequantize_int8": ("DEQUANTIZE", [act(x8, scale=0.05, zero_point=3)], act(x8, "float32"), {}),
        "softmax_int8": ("SOFTMAX", [act((2, 10), scale=0.1, zero_point=5)], act((2, 10), scale=1 / 256, zero_point=-128),
                         {"beta": 1.0}),
        "softmax_int8_to_int16": ("SOFTMAX", [act((3, 7), scale=0.2, zero_point=-5)],
                                  act((3, 7), "int16", 1 / 65536, -32768), {"beta": 0.7}),
        "softmax_int16": ("SOFTMAX", [act((3, 9), "int16", 0.00005)], act((3, 9), "int16", 1 / 32768),
                          {"beta": 1.0}),
        "softmax_int16_wide_beta": ("SOFTMAX", [act((2, 33), "int16", 0.001)],
                                    act((2, 33), "int16", 1 / 32768), {"beta": 2.5}),
        "depthwise_int8_multiplier2": ("DEPTHWISE_CONV_2D", [act(x8, zero_point=5),
                                                             const(weights((1, 3, 3, 8)), list(np.linspace(0.004, 0.02, 8)), 3),
                                                             const(np.arange(8, dtype=np.int32) * 30)],
                                       act((1, 3, 4, 8), scale=0.08, zero_point=-2),
                                       {"padding": SAME, "stride_w": 2, "stride_h": 2, "depth_multiplier": 2,
                                        "fused_activation_function": RELU6}),
        "depthwise_int16": ("DEPTHWISE_CONV_2D", [act(x16, "int16", 0.001),
                                                  const(weights((1, 3, 3, 3)), [0.01, 0.02, 0.03], 3),
                                                  const(np.array([100, -100, 5], np.int64))],
                            act(x16, "int16", 0.002), {"padding": SAME, "stride_w": 1, "stride_h": 1,
                                                       "depth_multiplier": 1}),
        "conv_int16_int32_bias": ("CONV_2D", [act(x16, "int16", 0.001),
                                              const(weights((4, 3, 3, 3)), per_channel),
                                              const(np.array([100, -100, 5, 0], np.int32))],
                                  act((1, 5, 6, 4), "int16", 0.004), {"padding": SAME, "stride_w": 1, "stride_h": 1}),
        "fully_connected_int8_per_channel": ("FULLY_CONNECTED", [act((3, 10), zero_point=-7),
                                                                 const(weights((4, 10)), per_channel),
                                                                 const(np.array([1, -2, 300, 0], np.int32))],
                                             act((3, 4), scale=0.2, zero_point=3), {}),
        "fully_connected_int16": ("FULLY_CONNECTED", [act((2, 10), "int16", 0.001),
                                                      const(weights((4, 10)), 0.01),
                                                      const(np.array([1000, -2, 300, 0], np.int64))],
                                  act((2, 4), "int16", 0.003), {}),
    }


SINGLE_OP_CASES = _cases()
NOT_REPRESENTABLE: dict[str, str] = {}


@pytest.mark.parametrize("case", [
    pytest.param(case, marks=pytest.mark.xfail(strict=True, reason=NOT_REPRESENTABLE[case]))
    if case in NOT_REPRESENTABLE else case for case in sorted(SINGLE_OP_CASES)])
def test_single_op_model_matches_tflm(case, tmp_path):
    op, operands, output, options = SINGLE_OP_CASES[case]
    path = tmp_path / f"{case}.tflite"
    path.write_bytes(one_op(op, operands, output, options))
    graph = load_model(path)
    batch = {value.name: random_inputs(value, 16, seed=index) * (3 if value.dtype.is_float else 1)
             for index, value in enumerate(graph.inputs)}
    ours = run_int(graph, batch, batch=True)[graph.outputs[0].name]
    interpreter = runtime.Interpreter.from_file(str(path))
    for sample in range(16):
        for index, value in enumerate(graph.inputs):
            interpreter.set_input(batch[value.name][sample], index)
        interpreter.invoke()
        reference = interpreter.get_output(0)
        assert ours[sample].reshape(reference.shape).tobytes() == reference.tobytes(), (
            f"sample {sample}: {np.count_nonzero(ours[sample].reshape(reference.shape) != reference)} "
            f"of {reference.size} outputs differ from TFLM")


# Input scales of int16 LOGISTIC / TANH: 2^-12 and 2^-11 take TFLM's power-of-two path
# (Tanh only for 2^-11), the rest its general multiplier (incl. 2^-13, a power of two outside
# that path, and scales whose rescale needs no shift (>= 1.34) or large shifts).
SMOOTH_STEP_INT16_SCALES = [2.0**-12, 2.0**-11, 2.0**-13, 2.0**-15, 0.0003, 0.001, 0.00005, 1e-6, 0.02,
                            1.5, 4.0]


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
@pytest.mark.parametrize("scale", SMOOTH_STEP_INT16_SCALES)
def test_smooth_step_int16_every_input_matches_tflm(op, scale, tmp_path):
    """All 65536 int16 inputs at once, for each input scale."""
    path = tmp_path / f"{op.lower()}.tflite"
    path.write_bytes(one_op(op, [act((65536,), "int16", scale)], act((65536,), "int16", 1 / 32768)))
    graph = load_model(path)
    every = np.arange(-32768, 32768, dtype=np.int16)
    ours = run_int(graph, {graph.inputs[0].name: every})[graph.outputs[0].name]
    interpreter = runtime.Interpreter.from_file(str(path), arena_size=400_000)
    reference = tflm_run(interpreter, every[None])[0]
    assert ours.tobytes() == reference.tobytes(), (
        f"{np.count_nonzero(ours != reference)} of 65536 outputs differ from TFLM, first at input "
        f"{every[ours != reference][0]}")


def test_quantize_ties_round_half_away_from_zero_like_tflm(tmp_path):
    """TFLM's QUANTIZE rounds halves away from zero (ONNX QuantizeLinear would round to
    even); the integer reference follows TFLM."""
    path = tmp_path / "quantize.tflite"
    path.write_bytes(one_op("QUANTIZE", [act((8,), "float32")], act((8,), scale=0.5, zero_point=0)))
    graph = load_model(path)
    ties = np.array([0.25, 0.75, 1.25, -0.25, -0.75, -1.25, 63.75, -64.25], np.float32)
    ours = run_int(graph, {graph.inputs[0].name: ties})[graph.outputs[0].name]
    assert ours.tolist() == [1, 2, 3, -1, -2, -3, 127, -128]
    assert np.array_equal(ours, tflm_outputs(path, ties[None])[0])
