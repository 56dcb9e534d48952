"""The C kernels added for issue 15 (runtime/src/binary_math.c, reduce.c, gather.c,
unary_math.c, log_softmax.c) against the Python integer reference, byte for byte, through
ctypes: random one-node graphs with edge cases (broadcasting, saturation, ties, negative and
out-of-range indices, every int8 input of Rsqrt), as in ``test_runtime_c.py``; then the
whole file again with the library built under ASan + UBSan."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO
from mcudeploy.reference.int_kernels import prepare_node
from test_runtime_c import SANITIZED, assert_nodes_match, per_tensor, random_tensor, single_node, zero_point

sys.path.insert(0, str(REPO / "runtime" / "tests"))
from mcu_ctypes import Dims, GatherParams, RsqrtQuant, Runtime, build_library  # noqa: E402


@pytest.fixture(scope="module")
def runtime(tmp_path_factory) -> Runtime:
    if shutil.which("gcc") is None:
        pytest.skip("host gcc not found")
    return Runtime(build_library(tmp_path_factory.mktemp("runtime") / "libmcu_runtime.so", sanitize=SANITIZED))


BROADCASTS = [((2, 3, 4, 5), (2, 3, 4, 5)), ((1, 3, 4, 5), (1, 1, 1, 5)), ((2, 1, 4, 1), (1, 3, 1, 5)),
              ((7,), (7,)), ((3, 1), (1, 4))]


def rng_for(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@pytest.mark.parametrize("op", ["Max", "Min"])
def test_maximum_minimum_match_reference(runtime, op, dtype):
    rng = rng_for(op, dtype)
    for first, second in BROADCASTS:
        quant = per_tensor(0.05, zero_point(rng, dtype))
        inputs = [(random_tensor(rng, dtype, first), quant, False), (random_tensor(rng, dtype, second), quant, True)]
        assert_nodes_match(runtime, *single_node(op, inputs, {}, quant))


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_squared_difference_matches_reference(runtime, dtype):
    rng = rng_for("squared_difference", dtype)
    for first, second in BROADCASTS:
        for scales in [(0.05, 0.03, 0.2), (0.1, 0.001, 0.01), (0.01, 0.01, 0.00002), (0.5, 0.4, 300.0)]:
            inputs = [(random_tensor(rng, dtype, first), per_tensor(scales[0], zero_point(rng, dtype)), False),
                      (random_tensor(rng, dtype, second), per_tensor(scales[1], zero_point(rng, dtype)), False)]
            out_quant = per_tensor(scales[2], zero_point(rng, dtype))
            assert_nodes_match(runtime, *single_node("SquaredDifference", inputs, {}, out_quant))


REDUCTIONS = [((1, 5, 7, 3), (1, 2), 1), ((2, 3, 4, 5), (3,), 0), ((2, 3, 4, 5), (0, 2), 1),
              ((6, 9), (-1,), 1), ((4, 3, 5), (0, 1, 2), 0)]


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin", "ReduceSum"])
def test_reductions_match_reference(runtime, op, dtype):
    rng = rng_for(op, dtype)
    for shape, axes, keepdims in REDUCTIONS:
        quant = per_tensor(0.05, zero_point(rng, dtype))
        out_quant = quant if op != "ReduceSum" else per_tensor(float(rng.uniform(0.01, 2.0)), zero_point(rng, dtype))
        inputs = [(random_tensor(rng, dtype, shape), quant, False)]
        assert_nodes_match(runtime, *single_node(op, inputs, {"axes": axes, "keepdims": keepdims}, out_quant))


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_max_min_match_reference_with_ties(runtime, op, dtype):
    rng = rng_for(op, dtype)
    for shape, axis in [((2, 10), 1), ((6, 3), 0), ((2, 3, 4, 5), 2), ((1, 4, 4, 8), -1)]:
        for last in (0, 1):
            x = rng.integers(-3, 3, shape).astype(dtype)   # few distinct values: many ties
            attrs = {"axis": axis, "keepdims": int(shape[0] == 2), "select_last_index": last,
                     "output_dtype": "int32"}
            graph, feeds = single_node(op, [(x, per_tensor(0.1), False)], attrs, None)
            assert_nodes_match(runtime, graph, feeds)


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_gather_tile_and_expand_match_reference(runtime, dtype):
    rng = rng_for("gather", dtype)
    quant = per_tensor(0.1, zero_point(rng, dtype))
    for shape, axis, indices in [((7, 3), 0, [[1, 2], [6, -1]]), ((1, 6, 4), 1, [4, 0, -6, 5]),
                                 ((2, 3, 4, 5), 3, [0, 4, 4]), ((2, 3, 4, 5), 2, [3])]:
        inputs = [(random_tensor(rng, dtype, shape), quant, False), (np.array(indices, np.int32), None, True)]
        assert_nodes_match(runtime, *single_node("Gather", inputs, {"axis": axis}, quant))
    for shape, repeats in [((2, 3), (2, 3)), ((1, 2, 1, 3), (2, 1, 4, 1)), ((5,), (3,))]:
        inputs = [(random_tensor(rng, dtype, shape), quant, False)]
        assert_nodes_match(runtime, *single_node("Tile", inputs, {"repeats": repeats}, quant))
    for shape, target in [((1, 3, 1), (2, 3, 4)), ((4,), (2, 3, 4)), ((2, 1, 1, 5), (2, 3, 4, 5))]:
        inputs = [(random_tensor(rng, dtype, shape), quant, False)]
        assert_nodes_match(runtime, *single_node("Expand", inputs, {"shape": target}, quant))


def test_gather_rejects_out_of_range_indices(runtime):
    x, out = np.zeros((1, 1, 6, 4), np.int8), np.zeros(8, np.int8)
    for indices, status in [([0, 5], 0), ([-6, 0], 0), ([6, 0], 1), ([0, -7], 1)]:
        flat = np.array(indices, np.int32)
        assert runtime.status("mcu_gather", None, GatherParams(axis=2), 1, Dims(1, 1, 6, 4), x, 2, flat, out) == status


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_abs_matches_reference(runtime, dtype):
    rng = rng_for("abs", dtype)
    everything = np.arange(np.iinfo(dtype).min, np.iinfo(dtype).max + 1, 1 if dtype == np.int8 else 61)
    x = everything.astype(dtype).reshape(1, -1)
    for in_scale, out_scale in [(0.05, 0.05), (0.05, 0.03), (0.01, 0.3), (0.2, 0.001)]:
        in_zero, out_zero = zero_point(rng, dtype), zero_point(rng, dtype)
        graph, feeds = single_node("Abs", [(x, per_tensor(in_scale, in_zero), False)], {},
                                   per_tensor(out_scale, out_zero))
        assert_nodes_match(runtime, graph, feeds)


def test_rsqrt_every_input_matches_reference(runtime):
    """Every int8 input at or above the zero point (0 gives 127, 1 the INT32_MAX multiplier),
    at input / output scales needing left and right shifts."""
    for in_scale, out_scale, in_zero, out_zero in [(0.05, 0.02, -128, -100), (3.0, 1 / 256, -128, -128),
                                                   (0.001, 0.5, -10, 3), (0.5, 0.004, 0, -128),
                                                   (100.0, 0.0001, -128, 0)]:
        x = np.arange(in_zero, 128, dtype=np.int8).reshape(1, -1)
        graph, feeds = single_node("Rsqrt", [(x, per_tensor(in_scale, in_zero), False)], {},
                                   per_tensor(out_scale, out_zero))
        assert_nodes_match(runtime, graph, feeds)


def test_rsqrt_refuses_inputs_below_the_zero_point(runtime):
    graph, _ = single_node("Rsqrt", [(np.zeros((1, 4), np.int8), per_tensor(0.1, -5), False)], {},
                           per_tensor(0.1, 0))
    params = prepare_node(graph.nodes[0])
    quant = RsqrtQuant(input_zero_point=params.input_zero_point, output_zero_point=params.output_zero_point,
                       multiplier=params.multiplier, shift=params.shift)
    out = np.zeros(4, np.int8)
    good, bad = np.array([-5, 0, 7, 127], np.int8), np.array([-5, -6, 7, 127], np.int8)
    assert runtime.status("mcu_rsqrt_s8", None, quant, Dims(1, 1, 1, 4), good, out) == 0
    assert runtime.status("mcu_rsqrt_s8", None, quant, Dims(1, 1, 1, 4), bad, out) == 1


def test_log_softmax_matches_reference(runtime):
    """Long and short rows, fine and coarse input scales (TFLM's fixed output scale 16/256)."""
    rng = rng_for("log_softmax")
    for shape, scale in [((3, 10), 0.1), ((2, 300), 0.02), ((4, 6), 0.5), ((1, 2, 3, 40), 0.004), ((2, 1000), 1.5)]:
        x = random_tensor(rng, np.int8, shape)
        x[0, ..., :3] = 7  # ties at the maximum
        inputs = [(x, per_tensor(scale, zero_point(rng, np.int8)), False)]
        assert_nodes_match(runtime, *single_node("LogSoftmax", inputs, {"axis": -1}, per_tensor(16 / 256, 127)))


@pytest.mark.slow
@pytest.mark.skipif(SANITIZED, reason="already the sanitized run")
def test_new_kernels_pass_under_address_and_undefined_sanitizers():
    """This file again, with the library built with -fsanitize=address,undefined."""
    libasan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(libasan):
        pytest.skip("gcc has no libasan")
    env = dict(os.environ, MCU_RUNTIME_SANITIZE="1", LD_PRELOAD=libasan, ASAN_OPTIONS="detect_leaks=0",
               UBSAN_OPTIONS="print_stacktrace=1")
    result = subprocess.run([sys.executable, "-m", "pytest", __file__, "-q", "-x", "-p", "no:cacheprovider",
                             "-k", "not sanitizers"], capture_output=True, text=True, env=env,
                            cwd=Path(__file__).parent, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert " passed" in result.stdout
