"""The C runtime (runtime/) against the Python integer reference, byte for byte.

Recipe: build a one-node quantized graph in code (random tensors, real float scales), let
the Python integer kernel's ``prepare`` compute multipliers / shifts / clamps, run the node
through ``run_int`` and through the C kernel (ctypes, runtime/tests/c_runners.py), and
compare output bytes. The same comparison runs on every node of real models (resnet8 and
the other int8 MLPerf Tiny models, the 127 int16 seanet single-op models). The fixed-point
primitives are compared directly on edge values. The C sources are also cross-compiled
for Cortex-M4 / M7 / M55 with -Werror, and the whole file re-runs under ASan + UBSan.
"""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import zlib

import numpy as np
import pytest

from conftest import INT8_MODELS, MODELS, REPO, shared_model
from mcudeploy.arithmetic import fixed_point as fp
from mcudeploy.importers import load_model
from mcudeploy.ir import DType, Graph, QuantParams, verify
from mcudeploy.reference.int_executor import run_int
from mcudeploy.reference.int_kernels import prepare_node
from mcudeploy.reference.int_kernels.smooth_step_int16 import SIGMOID_TABLE

sys.path.insert(0, str(REPO / "runtime" / "tests"))
from c_runners import run_node  # noqa: E402
from mcu_ctypes import (  # noqa: E402
    Activation,
    ChannelQuant,
    Context,
    ConvParams,
    Dims,
    Runtime,
    SmoothStepS16Quant,
    build_library,
    int_pointer,
)

SANITIZED = os.environ.get("MCU_RUNTIME_SANITIZE") == "1"
CPUS = {"cortex-m4": ["-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"],
        "cortex-m7": ["-mcpu=cortex-m7", "-mfloat-abi=hard", "-mfpu=fpv5-d16"],
        "cortex-m55": ["-mcpu=cortex-m55", "-mfloat-abi=hard"]}
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


@pytest.fixture(scope="module")
def runtime(tmp_path_factory) -> Runtime:
    if shutil.which("gcc") is None:
        pytest.skip("host gcc not found")
    return Runtime(build_library(tmp_path_factory.mktemp("runtime") / "libmcu_runtime.so",
                                 sanitize=SANITIZED))


# -- fixed-point primitives --------------------------------------------------------------
EDGES = np.array([INT32_MIN, INT32_MIN + 1, -2**30, -12345679, -1, 0, 1, 7, 2**30 - 1, 2**30,
                  INT32_MAX - 1, INT32_MAX], dtype=np.int64)


def random_int32(rng, count: int) -> np.ndarray:
    return rng.integers(INT32_MIN, INT32_MAX, count, endpoint=True, dtype=np.int64)


def test_srdhm_and_rdbpot_match_python_on_edges(runtime):
    rng = np.random.default_rng(0)
    a, b = np.meshgrid(np.concatenate([EDGES, random_int32(rng, 50)]),
                       np.concatenate([EDGES, random_int32(rng, 50)]))
    assert np.array_equal(runtime.probe("srdhm", a, b), fp.saturating_rounding_doubling_high_mul(a, b))
    x, exponent = np.meshgrid(np.concatenate([EDGES, random_int32(rng, 200)]), np.arange(0, 32))
    assert np.array_equal(runtime.probe("rdbpot", x, exponent), fp.rounding_divide_by_pot(x, exponent))


def test_multiply_by_quantized_multiplier_matches_python(runtime):
    """Shifts -31..30 (negative = right), multipliers at 0, 2^30 (the fixed-up 2^31 case),
    2^31 - 1 and INT32_MIN (srdhm saturation), x at the int32 edges."""
    rng = np.random.default_rng(1)
    multipliers = np.concatenate([[0, 1, 2**30, INT32_MAX, INT32_MIN], rng.integers(2**30, 2**31, 20)])
    x, m, s = np.meshgrid(np.concatenate([EDGES, random_int32(rng, 40)]), multipliers, np.arange(-31, 31))
    assert np.array_equal(runtime.probe("mbqm", x, m, s), fp.multiply_by_quantized_multiplier(x, m, s))
    wide = np.concatenate([EDGES, rng.integers(-2**47 + 1, 2**47 - 1, 60)])
    x, m, s = np.meshgrid(wide, multipliers[1:4].tolist() + [0x7FFF0000, 0x7FFEFFFF], np.arange(-31, 8))
    assert np.array_equal(runtime.probe64("mbqm64", x, m, s), fp.multiply_by_quantized_multiplier_int64(x, m, s))


def test_int16_and_gemmlowp_functions_match_python(runtime):
    rng = np.random.default_rng(2)
    a, b = np.meshgrid(np.arange(-32768, 32768, 257), [-32768, -1, 0, 1, 16384, 32767])
    assert np.array_equal(runtime.probe("srdhm16", a, b), fp.saturating_rounding_doubling_high_mul_int16(a, b))
    negative = np.concatenate([[INT32_MIN, -1, 0], -rng.integers(0, 2**31, 300)])
    for bits in (0, 4, 5, 6, 12):
        assert np.array_equal(runtime.probe("exp_on_negative_values", negative, bits),
                              fp.exp_on_negative_values(negative, bits)), bits
    values = np.concatenate([EDGES, random_int32(rng, 300)])
    assert np.array_equal(runtime.probe("logistic", values, 4), fp.logistic(values, 4))
    assert np.array_equal(runtime.probe("tanh", values, 4), fp.tanh(values, 4))
    positive = np.concatenate([[1, 2**19, 2**20 - 1, INT32_MAX], rng.integers(1, 2**31, 300)])
    reciprocal, bits_over_unit = fp.get_reciprocal(positive, 12)
    assert np.array_equal(runtime.probe("reciprocal", positive, 12), reciprocal)
    assert np.array_equal(runtime.probe("bits_over_unit", positive, 12), bits_over_unit)


# -- one-node graphs ------------------------------------------------------------------------
def per_tensor(scale: float, zero_point: int = 0) -> QuantParams:
    return QuantParams(np.array([scale], np.float32), np.array([zero_point]))


def random_tensor(rng, dtype, shape) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


def zero_point(rng, dtype) -> int:
    return int(rng.integers(-128, 128)) if np.dtype(dtype) == np.int8 else 0


def single_node(op: str, inputs: list, attrs: dict, out_quant: QuantParams):
    """Graph with one node; ``inputs``: (array, quant, is_constant). Returns (graph, feeds)."""
    graph, values, feeds = Graph(op), [], {}
    for index, (array, quant, constant) in enumerate(inputs):
        if array is None:
            values.append(None)
        elif constant:
            values.append(graph.add_constant(f"c{index}", array, quant=quant))
        else:
            values.append(graph.add_input(f"x{index}", DType.from_numpy(array.dtype), array.shape, quant=quant))
            feeds[f"x{index}"] = array
    node = graph.add_node(op, values, attrs, name=op.lower())
    node.outputs[0].quant = out_quant
    graph.outputs = list(node.outputs)
    verify(graph)
    return graph, feeds


def assert_nodes_match(runtime: Runtime, graph: Graph, feeds: dict) -> int:
    """Every node of ``graph``: C output bytes == Python integer reference bytes. Returns
    the number of nodes compared (nodes without a C kernel raise NotImplementedError)."""
    env = run_int(graph, feeds, capture=True)
    for node in graph.nodes:
        inputs = [None if v is None else (v.const if v.const is not None else env[v.name]) for v in node.inputs]
        actual = run_node(runtime, node, prepare_node(node), inputs)
        expected = env[node.outputs[0].name]
        assert actual.dtype == expected.dtype
        assert actual.tobytes() == expected.tobytes(), (
            f"node {node.name} ({node.op}): {np.count_nonzero(actual != expected)} of {actual.size} "
            f"outputs differ, first at {np.argwhere(actual != expected)[0]}")
    return len(graph.nodes)


def output_scale_for(in_scale: float, weight_scale: float, depth: int, spread: float) -> float:
    """An output scale putting the accumulator's typical magnitude at ~``40 * spread``
    output steps (spread >> 1 saturates, spread << 1 uses few levels)."""
    return float(in_scale * weight_scale * np.sqrt(depth) * 74 * 74 / (40 * spread))


CONV_CASES = {  # name: (dtype, input NHWC, out channels, kernel, strides, pads, dilations, group)
    "3x3_pad": (np.int8, (1, 6, 7, 5), 4, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "stride2_odd": (np.int8, (2, 9, 7, 3), 6, (3, 2), (2, 2), (1, 0, 1, 1), (1, 1), 1),
    "dilated": (np.int8, (1, 8, 8, 2), 3, (3, 3), (1, 2), (2, 2, 2, 2), (2, 2), 1),
    "grouped": (np.int8, (1, 5, 5, 6), 4, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2),
    "pointwise": (np.int8, (1, 4, 4, 16), 8, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "depthwise": (np.int8, (1, 7, 6, 4), 4, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4),
    "depthwise_m3_s2": (np.int8, (1, 9, 8, 2), 6, (3, 3), (2, 2), (0, 1, 1, 1), (1, 1), 2),
    "16x8_3x3": (np.int16, (1, 6, 5, 3), 4, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "16x8_depthwise_m2": (np.int16, (1, 6, 6, 3), 6, (3, 3), (2, 1), (1, 1, 1, 1), (1, 1), 3),
}
SPREADS = {"typical": 1.0, "saturating": 20.0, "left_shift": 3000.0, "coarse": 0.05}


def conv_graph(rng, case, spread: float, per_channel: bool, op: str = "Conv", activation=(None, None)):
    dtype, in_shape, out_channels, kernel, strides, pads, dilations, group = case
    x = random_tensor(rng, dtype, in_shape)
    weights = random_tensor(rng, np.int8, (out_channels, *kernel, in_shape[3] // group))
    in_scale = float(rng.uniform(0.005, 0.05))
    weight_scales = rng.uniform(0.002, 0.02, out_channels if per_channel else 1).astype(np.float32)
    depth = kernel[0] * kernel[1] * in_shape[3] // group
    weight_quant = QuantParams(weight_scales, np.zeros(weight_scales.size), 0 if per_channel else None)
    bias_dtype = np.int64 if dtype == np.int16 else np.int32
    bias = rng.integers(-40 * 74 * int(np.sqrt(depth)), 40 * 74 * int(np.sqrt(depth)), out_channels).astype(bias_dtype)
    out_scale = output_scale_for(in_scale, float(weight_scales.mean()), depth, spread)
    attrs = {"layout": "NHWC", "strides": strides, "pads": pads, "dilations": dilations, "group": group,
             "activation_min": activation[0], "activation_max": activation[1]}
    inputs = [(x, per_tensor(in_scale, zero_point(rng, dtype)), False), (weights, weight_quant, True),
              (bias, None, True)]
    return single_node(op, inputs, attrs, per_tensor(out_scale, zero_point(rng, dtype)))


@pytest.mark.parametrize("spread", SPREADS.values(), ids=SPREADS.keys())
@pytest.mark.parametrize("case", CONV_CASES.values(), ids=CONV_CASES.keys())
def test_conv_matches_reference(runtime, case, spread):
    rng = np.random.default_rng(zlib.crc32(f"{case}{spread}".encode()))
    for per_channel, activation in ((True, (None, None)), (False, (0.0, 6.0)), (True, (-1.0, 1.0))):
        assert_nodes_match(runtime, *conv_graph(rng, case, spread, per_channel, activation=activation))


TRANSPOSE_CONV_CASES = {
    "stride2_same": (np.int8, (1, 4, 5, 3), 4, (3, 3), (2, 2), (1, 1, 0, 0), (1, 1), 1),
    "stride1_crop": (np.int8, (2, 3, 3, 2), 3, (2, 3), (1, 1), (0, 1, 0, 1), (1, 1), 1),
    "16x8_stride2": (np.int16, (1, 3, 4, 2), 3, (4, 4), (2, 2), (1, 1, 1, 1), (1, 1), 1),
}


def test_conv_with_multiplier_rounded_up_to_two_to_the_31(runtime):
    """s_in * s_w / s_out = 1 - 2^-46: q * 2^31 rounds to 2^31, which prepare turns into
    multiplier 2^30 with shift + 1 (and a left shift of 1 reaches C)."""
    rng = np.random.default_rng(12)
    graph, feeds = conv_graph(rng, CONV_CASES["3x3_pad"], 1.0, False)
    node = graph.nodes[0]
    node.inputs[0].quant = per_tensor(float(np.float32(1 + 2**-23)), 3)
    node.inputs[1].quant = QuantParams(np.array([1 - 2**-23], np.float32), np.zeros(1), None)
    node.outputs[0].quant = per_tensor(1.0, -7)
    params = prepare_node(node)
    assert params.output_multiplier.tolist() == [2**30] * 4 and params.output_shift.tolist() == [1] * 4
    assert_nodes_match(runtime, graph, feeds)


@pytest.mark.parametrize("spread", [1.0, 20.0], ids=["typical", "saturating"])
@pytest.mark.parametrize("case", TRANSPOSE_CONV_CASES.values(), ids=TRANSPOSE_CONV_CASES.keys())
def test_transpose_conv_matches_reference(runtime, case, spread):
    rng = np.random.default_rng(7)
    for per_channel in (True, False):
        assert_nodes_match(runtime, *conv_graph(rng, case, spread, per_channel, op="ConvTranspose"))


def test_fully_connected_matches_reference(runtime):
    rng = np.random.default_rng(11)
    for dtype, rows, depth, units, per_channel, spread in [
            (np.int8, 3, 17, 5, False, 1.0), (np.int8, 1, 64, 10, True, 1.0), (np.int8, 2, 33, 7, False, 30.0),
            (np.int8, 4, 9, 3, True, 0.05), (np.int16, 2, 21, 6, True, 1.0), (np.int16, 3, 40, 4, False, 25.0)]:
        x = random_tensor(rng, dtype, (rows, depth))
        weights = random_tensor(rng, np.int8, (units, depth))
        scales = rng.uniform(0.002, 0.02, units if per_channel else 1).astype(np.float32)
        weight_zero_point = 0 if per_channel or dtype == np.int16 else int(rng.integers(-5, 6))
        weight_quant = QuantParams(scales, np.full(scales.size, weight_zero_point), 0 if per_channel else None)
        bias = rng.integers(-5000, 5000, units).astype(np.int64 if dtype == np.int16 else np.int32)
        in_scale = float(rng.uniform(0.01, 0.05))
        out_quant = per_tensor(output_scale_for(in_scale, float(scales.mean()), depth, spread), zero_point(rng, dtype))
        attrs = {"transB": 1, "activation_min": 0.0 if spread == 1.0 else None}
        inputs = [(x, per_tensor(in_scale, zero_point(rng, dtype)), False), (weights, weight_quant, True),
                  (bias, None, True)]
        assert_nodes_match(runtime, *single_node("Gemm", inputs, attrs, out_quant))


BROADCASTS = [((2, 3, 4, 5), (2, 3, 4, 5)), ((1, 3, 4, 5), (1, 1, 1, 5)), ((2, 1, 4, 1), (1, 3, 1, 5)),
              ((7,), (7,)), ((3, 1), (1, 4))]


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul"])
def test_elementwise_matches_reference(runtime, op, dtype):
    rng = np.random.default_rng(zlib.crc32(f"{op}{dtype}".encode()))
    for first_shape, second_shape in BROADCASTS:
        for scales in [(0.02, 0.03, 0.04), (0.1, 0.001, 0.05), (0.01, 0.01, 0.0001), (0.5, 0.4, 3.0)]:
            inputs = [(random_tensor(rng, dtype, first_shape), per_tensor(scales[0], zero_point(rng, dtype)), False),
                      (random_tensor(rng, dtype, second_shape), per_tensor(scales[1], zero_point(rng, dtype)), False)]
            attrs = {"activation_min": 0.0} if scales[2] == 0.04 else {}
            out_quant = per_tensor(scales[2] * (30 if op == "Mul" else 1), zero_point(rng, dtype))
            assert_nodes_match(runtime, *single_node(op, inputs, attrs, out_quant))


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@pytest.mark.parametrize("op", ["AveragePool", "MaxPool"])
def test_pool_matches_reference(runtime, op, dtype):
    rng = np.random.default_rng(5)
    for shape, kernel, strides, pads in [((1, 7, 7, 3), (3, 3), (2, 2), (1, 1, 1, 1)),
                                         ((2, 8, 5, 4), (2, 2), (2, 2), (0, 0, 0, 1)),
                                         ((1, 5, 6, 2), (5, 6), (1, 1), (0, 0, 0, 0)),
                                         ((1, 6, 6, 1), (3, 2), (1, 2), (2, 1, 2, 1))]:
        quant = per_tensor(0.05, zero_point(rng, dtype))
        attrs = {"layout": "NHWC", "kernel_shape": kernel, "strides": strides, "pads": pads,
                 "activation_min": 0.0}
        assert_nodes_match(runtime, *single_node(op, [(random_tensor(rng, dtype, shape), quant, False)], attrs,
                                                 quant))


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_mean_matches_reference(runtime, dtype):
    rng = np.random.default_rng(6)
    for shape, axes, keepdims, scales in [
            ((1, 5, 7, 3), (1, 2), 1, (0.05, 0.04)), ((2, 3, 4, 5), (3,), 0, (0.02, 0.03)),
            ((2, 3, 4, 5), (0, 2), 1, (0.1, 0.01)), ((6, 9), (-1,), 1, (0.01, 0.3)),
            ((1, 10, 10, 8), (1, 2), 0, (0.02, 0.0005))]:
        inputs = [(random_tensor(rng, dtype, shape), per_tensor(scales[0], zero_point(rng, dtype)), False)]
        attrs = {"axes": axes, "keepdims": keepdims}
        assert_nodes_match(runtime, *single_node("ReduceMean", inputs, attrs,
                                                 per_tensor(scales[1], zero_point(rng, dtype))))


@pytest.mark.parametrize("out_dtype", [np.int8, np.int16])
def test_softmax_matches_reference(runtime, out_dtype):
    rng = np.random.default_rng(8)
    out_quant = per_tensor(1 / 256, -128) if out_dtype == np.int8 else per_tensor(1 / 65536, -32768)
    for shape, scale, beta in [((2, 10), 0.1, 1.0), ((1, 3, 4, 7), 0.02, 1.0), ((3, 1000), 0.5, 1.0),
                               ((4, 600), 0.001, 1.0), ((2, 12), 0.25, 0.5)]:
        x = random_tensor(rng, np.int8, shape)
        if shape[-1] >= 600:
            x[0] = 5  # a uniform row: the sum is large and the final shift exceeds 31
        attrs = {"axis": -1, "beta": beta, "output_dtype": np.dtype(out_dtype).name}
        graph, feeds = single_node("Softmax", [(x, per_tensor(scale, zero_point(rng, np.int8)), False)],
                                   attrs, out_quant)
        assert graph.outputs[0].dtype == DType.from_numpy(out_dtype)
        assert_nodes_match(runtime, graph, feeds)


@pytest.mark.parametrize("op", ["Sigmoid", "Tanh", "HardSwish", "LeakyRelu"])
def test_activations_match_reference(runtime, op):
    rng = np.random.default_rng(zlib.crc32(op.encode()))
    dtypes = [np.int8, np.int16] if op == "LeakyRelu" else [np.int8]
    for dtype in dtypes:
        for in_scale in (0.002, 0.03, 0.1, 0.5):
            x = np.concatenate([np.arange(np.iinfo(dtype).min, np.iinfo(dtype).max + 1, 1 if dtype == np.int8 else 97),
                                random_tensor(rng, dtype, 50)]).astype(dtype).reshape(1, -1)
            out_quant = {"Sigmoid": per_tensor(1 / 256, -128), "Tanh": per_tensor(1 / 128, 0)}.get(
                op, per_tensor(in_scale * float(rng.uniform(0.3, 1.5)), zero_point(rng, dtype)))
            attrs = {"alpha": float(rng.uniform(0.01, 0.9))} if op == "LeakyRelu" else {}
            inputs = [(x, per_tensor(in_scale, zero_point(rng, dtype)), False)]
            assert_nodes_match(runtime, *single_node(op, inputs, attrs, out_quant))


@pytest.mark.parametrize("op", ["Sigmoid", "Tanh"])
def test_int16_sigmoid_and_tanh_match_reference(runtime, op):
    """Every int16 input, at power-of-two scales (TFLM's fast path for 2^-12, Tanh also 2^-11)
    and general ones (down to shifts of 30, and none at scale 4)."""
    x = np.arange(-32768, 32768, dtype=np.int16).reshape(4, -1)
    for in_scale in (2.0**-12, 2.0**-11, 2.0**-13, 0.0003, 0.02, 1e-6, 4.0):
        inputs = [(x, per_tensor(in_scale), False)]
        assert_nodes_match(runtime, *single_node(op, inputs, {}, per_tensor(1 / 32768)))


def test_int16_sigmoid_table_agrees_with_the_c_runtime():
    """The Python and C copies of TFLM's sigmoid table hold the same 256 numbers."""
    source = (REPO / "runtime" / "src" / "smooth_step_s16.c").read_text()
    body = source[source.index("sigmoid_table[256] = {"):].split("{", 1)[1].split("}", 1)[0]
    assert [int(v) for v in body.replace(",", " ").split()] == SIGMOID_TABLE.tolist()


def test_quantize_requantize_dequantize_match_reference(runtime):
    rng = np.random.default_rng(9)
    floats = np.concatenate([rng.standard_normal(200) * 3, [0.0, 0.5, -0.5, 1.5, -2.5, 1e9, -1e9, 0.49999997]])
    floats = floats.astype(np.float32).reshape(2, -1)
    for to in ("int8", "int16"):
        for scale in (0.01, 0.1, 1.0):
            quant = per_tensor(scale, zero_point(rng, np.dtype(to)))
            for rounding in ("half_away_from_zero", "half_to_even"):    # TFLite, ONNX
                graph, feeds = single_node("QuantizeLinear", [(floats, None, False)],
                                           {"to": to, "rounding": rounding}, quant)
                assert_nodes_match(runtime, graph, feeds)
            x = random_tensor(rng, np.dtype(to), (3, 5, 7))
            assert_nodes_match(runtime, *single_node("DequantizeLinear", [(x, quant, False)], {}, None))
    for source, target in [("int8", "int8"), ("int8", "int16"), ("int16", "int8"), ("int16", "int16"),
                           ("int32", "int8"), ("int32", "int16")]:
        for ratio in (0.3, 1.0, 7.5, 1e-6):
            x = random_tensor(rng, np.dtype(source), (4, 33))
            in_quant = per_tensor(0.02, zero_point(rng, np.dtype(source)) if source == "int8" else 0)
            out_quant = per_tensor(0.02 / ratio, zero_point(rng, np.dtype(target)))
            assert_nodes_match(runtime, *single_node("QuantizeLinear", [(x, in_quant, False)], {"to": target},
                                                     out_quant))


DATA_MOVEMENT = {  # name: (op, input shape, attrs)
    "transpose_nhwc_nchw": ("Transpose", (2, 3, 4, 5), {"perm": (0, 3, 1, 2)}),
    "transpose_rank3": ("Transpose", (3, 4, 5), {"perm": (2, 0, 1)}),
    "slice_strided": ("Slice", (2, 7, 8, 5), {"starts": (1, 0, 2), "ends": (7, 100, 5), "axes": (1, 2, 3),
                                              "steps": (2, 3, 1)}),
    "slice_negative_step": ("Slice", (1, 6, 6, 3), {"starts": (-1, 4), "ends": (-100, 0), "axes": (1, 2),
                                                    "steps": (-2, -1)}),
    "slice_channel_run": ("Slice", (1, 5, 6, 9), {"starts": (1, 2), "ends": (4, 8), "axes": (1, 3),
                                                  "steps": (1, 1)}),     # a pixel's channels copied as one run
    "slice_channel_reversed": ("Slice", (1, 4, 4, 6), {"starts": (5,), "ends": (-100,), "axes": (3,),
                                                       "steps": (-2,)}),
    "pad_constant": ("Pad", (1, 3, 4, 2), {"pads": (0, 1, 2, 0, 0, 2, 1, 1), "value": 0.0}),
    "pad_value_crop": ("Pad", (1, 5, 5, 2), {"pads": (0, -1, 2, 0, 0, 1, -2, 0), "value": 1.5}),
    "pad_reflect": ("Pad", (1, 4, 5, 2), {"pads": (0, 3, 2, 0, 0, 2, 4, 0), "mode": "reflect"}),
    "pad_edge": ("Pad", (2, 3, 3, 3), {"pads": (0, 2, 1, 1, 0, 1, 3, 0), "mode": "edge"}),
    "reshape": ("Reshape", (2, 3, 4, 5), {"shape": (6, 20)}),
    "nearest_up": ("Resize", (1, 3, 4, 2), {"sizes": (1, 7, 9, 2), "mode": "nearest",
                                            "coordinate_transformation_mode": "asymmetric"}),
    "nearest_half_pixel": ("Resize", (1, 5, 3, 2), {"sizes": (1, 8, 7, 2), "mode": "nearest",
                                                    "coordinate_transformation_mode": "tf_half_pixel_for_nn"}),
    "nearest_align": ("Resize", (2, 4, 4, 1), {"sizes": (2, 7, 3, 1), "mode": "nearest",
                                               "coordinate_transformation_mode": "align_corners"}),
    "bilinear_up": ("Resize", (1, 3, 4, 3), {"sizes": (1, 6, 9, 3), "mode": "linear",
                                             "coordinate_transformation_mode": "asymmetric"}),
    "bilinear_half_pixel": ("Resize", (1, 4, 5, 2), {"sizes": (1, 9, 3, 2), "mode": "linear",
                                                     "coordinate_transformation_mode": "half_pixel"}),
    "bilinear_align": ("Resize", (1, 5, 4, 2), {"sizes": (1, 8, 8, 2), "mode": "linear",
                                                "coordinate_transformation_mode": "align_corners"}),
}


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@pytest.mark.parametrize("op, shape, attrs", DATA_MOVEMENT.values(), ids=DATA_MOVEMENT.keys())
def test_data_movement_matches_reference(runtime, op, shape, attrs, dtype):
    rng = np.random.default_rng(3)
    quant = per_tensor(0.1, zero_point(rng, dtype))
    assert_nodes_match(runtime, *single_node(op, [(random_tensor(rng, dtype, shape), quant, False)], attrs, quant))


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_concat_matches_reference(runtime, dtype):
    rng = np.random.default_rng(4)
    for axis, shapes in [(3, [(1, 2, 3, 4), (1, 2, 3, 1), (1, 2, 3, 5)]), (1, [(2, 1, 3, 2), (2, 4, 3, 2)]),
                         (0, [(1, 2, 2), (3, 2, 2)]), (-1, [(3, 5), (3, 2)])]:
        out_quant = per_tensor(0.05, zero_point(rng, dtype))
        inputs = [(random_tensor(rng, dtype, shape), out_quant if i % 2 == 0 else
                   per_tensor(float(rng.uniform(0.01, 0.2)), zero_point(rng, dtype)), False)
                  for i, shape in enumerate(shapes)]
        assert_nodes_match(runtime, *single_node("Concat", inputs, {"axis": axis}, out_quant))


# -- real models ------------------------------------------------------------------------------
def random_feeds(graph: Graph, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {v.name: random_tensor(rng, v.dtype.numpy, v.shape) if not v.dtype.is_float
            else rng.standard_normal(v.shape).astype(np.float32) for v in graph.inputs}




@pytest.mark.parametrize("model", INT8_MODELS)
def test_every_node_of_int8_model_matches_reference(runtime, model, caplog):
    caplog.set_level(logging.ERROR)
    graph = load_model(shared_model(model))
    feeds = random_feeds(graph, 0)
    assert assert_nodes_match(runtime, graph, feeds) == len(graph.nodes)


SEANET = MODELS / "tflite_micro" / "seanet_golden"
SEANET_CASES = sorted(str(p.relative_to(SEANET))[:-len(".tflite")] for p in SEANET.glob("*/*.tflite"))


def test_every_int16_seanet_node_matches_reference(runtime, caplog):
    """All 127 int16 single-op seanet models (add, sub, conv, transpose conv, leaky relu,
    pad, quantize, strided slice), random inputs."""
    if not SEANET_CASES:
        shared_model("tflite_micro/seanet_golden/add/add0.tflite")  # skips (or fails in CI)
    caplog.set_level(logging.ERROR)
    compared, missing = 0, []
    for case in SEANET_CASES:
        graph = load_model(SEANET / f"{case}.tflite")
        try:
            compared += assert_nodes_match(runtime, graph, random_feeds(graph, 1))
        except NotImplementedError as reason:
            missing.append(f"{case}: {reason}")
    assert not missing and compared >= len(SEANET_CASES), missing


# -- status codes -----------------------------------------------------------------------------
def test_kernels_reject_bad_arguments_and_small_scratch(runtime):
    x, w = np.zeros((1, 4, 4, 2), np.int8), np.zeros((3, 3, 3, 2), np.int8)
    out = np.zeros((1, 4, 4, 3), np.int8)
    multiplier, shift = np.full(3, 2**30, np.int32), np.zeros(3, np.int32)
    quant = ChannelQuant(input_offset=0, output_offset=0, multiplier=int_pointer(multiplier), shift=int_pointer(shift))

    def conv_params(stride_h: int = 1, low: int = -128, high: int = 127) -> ConvParams:
        return ConvParams(stride_h=stride_h, stride_w=1, pad_top=1, pad_left=1, dilation_h=1, dilation_w=1,
                          activation=Activation(min=low, max=high))
    good = conv_params()
    args = (quant, Dims(1, 4, 4, 2), x, Dims(3, 3, 3, 2), w, None, Dims(1, 4, 4, 3), out)
    assert runtime.status("mcu_conv2d_s8", None, good, *args) == 0
    assert runtime.status("mcu_conv2d_s8", None, conv_params(stride_h=0), *args) == 1
    assert runtime.status("mcu_conv2d_s8", None, conv_params(low=5, high=4), *args) == 1
    assert runtime.status("mcu_conv2d_s8", None, good, quant, Dims(1, 4, 4, 2), None, *args[3:]) == 1
    assert runtime.status("mcu_conv2d_s8", None, good, quant, Dims(1, 4, 4, 2), x, Dims(4, 3, 3, 2), *args[4:]) == 1
    scratch = np.zeros(16, np.uint8)
    assert runtime.status("mcu_transpose_conv2d_s8", Context(buffer=scratch.ctypes.data, size=scratch.size), good, *args) == 2
    assert runtime.status("mcu_transpose_conv2d_s8", None, good, *args) == 2
    assert runtime.status("mcu_fully_connected_s8", None, None, None, Dims(1, 1, 1, 2), x, Dims(3, 1, 1, 2), w,
                          None, Dims(1, 1, 1, 3), out) == 1


@pytest.mark.parametrize("function", ["mcu_logistic_s16", "mcu_tanh_s16"])
def test_int16_smooth_step_rejects_overflowing_rescale(runtime, function):
    x, out = np.zeros(8, np.int16), np.zeros(8, np.int16)
    for multiplier, shift, status in [(32767, 31, 0), (65535, 0, 0), (32768, 1, 1), (65536, 0, 1),
                                      (-1, 0, 1), (3, 32, 1), (3, -1, 1)]:
        quant = SmoothStepS16Quant(input_multiplier=multiplier, input_left_shift=shift)
        assert runtime.status(function, None, quant, Dims(1, 1, 1, 8), x, Dims(1, 1, 1, 8), out) == status


# -- cross compilation and sanitizers -----------------------------------------------------
def arm_compiler() -> str:
    compiler = shutil.which("arm-none-eabi-gcc")
    if compiler is None:
        if os.environ.get("CI") == "true":
            pytest.fail("arm-none-eabi-gcc missing in CI; run tools/install_toolchain.sh")
        pytest.skip("arm-none-eabi-gcc not installed; run tools/install_toolchain.sh")
    return compiler


@pytest.mark.parametrize("cpu", CPUS)
def test_runtime_cross_compiles_for_cortex_m_with_werror(cpu, tmp_path):
    compiler = arm_compiler()
    runtime_dir = REPO / "runtime"
    sources = sorted(str(p) for p in (runtime_dir / "src").glob("*.c"))
    command = [compiler, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-ffp-contract=off", "-Os",
               "-mthumb", *CPUS[cpu], f"-I{runtime_dir / 'include'}", "-c", *sources]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, f"{cpu}:\n{result.stderr}"
    assert len(list(tmp_path.glob("*.o"))) == len(sources)
    size = subprocess.run([compiler.replace("gcc", "size"), *sorted(map(str, tmp_path.glob("*.o")))],
                          capture_output=True, text=True, check=True).stdout
    text_bytes = sum(int(line.split()[0]) for line in size.splitlines()[1:])
    assert 0 < text_bytes < 64 * 1024, size


@pytest.mark.slow
@pytest.mark.skipif(SANITIZED, reason="already the sanitized run")
def test_bit_exact_tests_pass_under_address_and_undefined_sanitizers():
    """Re-runs this file (minus itself and the cross builds) with the library built with
    -fsanitize=address,undefined; libasan is preloaded because python is not instrumented."""
    libasan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(libasan):
        pytest.skip("gcc has no libasan")
    env = dict(os.environ, MCU_RUNTIME_SANITIZE="1", LD_PRELOAD=libasan,
               ASAN_OPTIONS="detect_leaks=0", UBSAN_OPTIONS="print_stacktrace=1")
    result = subprocess.run([sys.executable, "-m", "pytest", __file__, "-q", "-s", "-x", "-p", "no:cacheprovider",
                             "-k", "not sanitizers and not cross_compiles"],
                            capture_output=True, text=True, env=env, cwd=REPO / "tests", timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert " passed" in result.stdout
