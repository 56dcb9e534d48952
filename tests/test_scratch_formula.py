"""Scratch sizes have one formula: the header's macros, which the C ``_scratch_size``
functions return and mcudeploy.kernels.scratch_formula evaluates. Checked: the evaluator
reads the subset it promises and refuses the rest; every variant's planned scratch bytes
equal what its C function returns for the same layer (host build through ctypes), over
shapes that reach each branch of the formulas (C % 4, K % 16, pointwise, 3x3 band)."""
from __future__ import annotations

import re
import shutil
import sys
from ctypes import byref, c_int32

import numpy as np
import pytest

from codegen_graphs import q, weights
from conftest import REPO
from mcudeploy.codegen.kernel_table import params_struct
from mcudeploy.ir import DType, Graph, verify
from mcudeploy.kernels import dsp, mve, reference_scratch_bytes
from mcudeploy.kernels.scratch_formula import scratch_formula
from mcudeploy.kernels.scratch_formulas import FORMULAS
from mcudeploy.reference.int_kernels import prepare_node

sys.path.insert(0, str(REPO / "runtime" / "tests"))
from mcu_ctypes import build_library, dims, from_table  # noqa: E402


def test_formulas_evaluate_as_c_does():
    assert scratch_formula("MCU_ROUND_UP", 17, 16) == 32 and scratch_formula("MCU_ROUND_UP", 16, 16) == 16
    assert scratch_formula("MCU_MAX", 3, 9) == 9 and scratch_formula("MCU_MAX", 9, 3) == 9
    assert scratch_formula("MCU_FULLY_CONNECTED_S8_MVE_SCRATCH_BYTES", depth=20) == 64
    assert scratch_formula("MCU_FULLY_CONNECTED_S8_MVE_SCRATCH_BYTES", depth=32) == 0
    assert scratch_formula("MCU_CONV2D_S8_DSP_SCRATCH_BYTES", depth=27, in_c=3, in_bytes=300, out_bytes=300) == 4 * 28 + 28
    # K >= 64: four columns (quad) when 8 * Kp fits max(1 KiB, (in + out) / 2), else three, else two
    assert scratch_formula("MCU_CONV2D_S8_DSP_SCRATCH_BYTES", 144, 16, 16384, 16384) == 8 * 144
    assert scratch_formula("MCU_CONV2D_S8_DSP_SCRATCH_BYTES", 576, 64, 4096, 4096) == 6 * 576
    assert scratch_formula("MCU_CONV2D_S8_DSP_SCRATCH_BYTES", 1024, 1024, 2048, 2048) == 4 * 1024
    assert scratch_formula("MCU_CONV2D_S8_DSP_BLOCK", 60, 4, 100, 100) == 2
    assert scratch_formula("MCU_CONV2D_S8_DSP_SCRATCH_BYTES", 100, 4, 100, 100) == 8 * 100


def test_formulas_outside_the_shared_subset_are_refused(monkeypatch):
    from mcudeploy.kernels import scratch_formula as module
    monkeypatch.setitem(module.FORMULAS, "MCU_TEST_AND", (("a",), "((a) & 3)"))
    monkeypatch.setitem(module.FORMULAS, "MCU_TEST_DIVIDE", (("a",), "((a) / 4)"))
    module._parsed.cache_clear()
    with pytest.raises(ValueError, match="subset"):
        scratch_formula("MCU_TEST_AND", 5)
    with pytest.raises(ValueError, match="non-negative"):
        scratch_formula("MCU_TEST_DIVIDE", -5)
    with pytest.raises(TypeError, match="takes"):
        scratch_formula("MCU_ROUND_UP", 1)
    with pytest.raises(KeyError, match="make_abi_structs"):
        scratch_formula("MCU_NO_SUCH_SCRATCH_BYTES", 1)
    module._parsed.cache_clear()


def test_every_scratch_size_function_returns_a_formula():
    """Each C ``_scratch_size`` function returns a header formula macro, or only 0 (no scratch)."""
    definition = re.compile(r"^int32_t (mcu_\w+_scratch_size)\([^)]*\)\s*\{(.*?)^\}", re.DOTALL | re.MULTILINE)
    found = {name: body for path in (REPO / "runtime" / "src").rglob("*.c")
             for name, body in definition.findall(path.read_text(encoding="utf-8"))}
    assert len(found) >= 7
    for name, body in found.items():
        returns = re.findall(r"return ([^;]*);", body)
        assert any(formula in body for formula in FORMULAS) or set(returns) == {"0"}, name


def _conv(shape, kernel, channels_out, *, strides=(1, 1), pads=(0, 0, 0, 0), group=1, dtype=DType.INT8):
    graph = Graph("scratch")
    x = graph.add_input("x", dtype, shape, quant=q(0.05, 0 if dtype == DType.INT16 else -2), layout="NHWC")
    w = graph.add_constant("w", weights((channels_out, *kernel, shape[3] // group)),
                           quant=q(np.full(channels_out, 0.01), 0, 0))
    node = graph.add_node("Conv", [x, w], {"layout": "NHWC", "strides": strides, "pads": pads, "group": group},
                          name="conv")
    node.outputs[0].quant = q(0.1, 1 if dtype == DType.INT8 else 0)
    graph.outputs = [node.outputs[0]]
    verify(graph)
    return node


def _transpose_conv(shape, dtype):
    graph = Graph("scratch")
    x = graph.add_input("x", dtype, shape, quant=q(0.05, 0), layout="NHWC")
    w = graph.add_constant("w", weights((5, 2, 2, shape[3])), quant=q(np.full(5, 0.01), 0, 0))
    node = graph.add_node("ConvTranspose", [x, w], {"layout": "NHWC", "strides": (2, 2)}, name="tconv")
    graph.outputs = [node.outputs[0]]
    return node


def _gemm(depth):
    graph = Graph("scratch")
    x = graph.add_input("x", DType.INT8, (2, depth), quant=q(0.05, -2))
    w = graph.add_constant("w", weights((6, depth)), quant=q(np.full(6, 0.01), 0, 0))
    node = graph.add_node("Gemm", [x, w], {"transB": 1}, name="fc")
    node.outputs[0].quant = q(0.1, 1)
    graph.outputs = [node.outputs[0]]
    return node


CONVS = [((1, 6, 6, 3), (3, 3), 4, {}), ((1, 5, 7, 8), (3, 3), 4, {"pads": (1, 0, 1, 2)}),
         ((1, 4, 4, 32), (1, 1), 8, {}), ((1, 4, 4, 12), (1, 1), 8, {}),
         ((1, 9, 9, 16), (3, 3), 4, {"strides": (2, 2), "pads": (1, 1, 0, 0)})]
DEPTHWISE = [((1, 6, 6, 8), (3, 3), {"pads": (1, 1, 1, 1)}), ((1, 9, 7, 16), (3, 3), {"strides": (2, 2)}),
             ((1, 5, 5, 8), (5, 5), {"pads": (2, 2, 2, 2)})]


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    if shutil.which("gcc") is None:
        pytest.skip("host gcc not found")
    import ctypes
    return ctypes.CDLL(str(build_library(tmp_path_factory.mktemp("lib") / "libmcu.so", variants=True)))


def _c_size(library, function: str, node, *, with_params: bool = True) -> int:
    call = library[function]
    call.restype = c_int32
    x, y = node.inputs[0], node.outputs[0]
    if not with_params:
        return call(byref(dims(y.shape)))
    params = from_table(params_struct(node, prepare_node(node)))
    return call(byref(params), byref(dims(x.shape)), byref(dims(node.inputs[1].shape)), byref(dims(y.shape)))


@pytest.mark.slow
def test_planned_scratch_equals_the_c_functions(library):
    checked = 0
    for shape, kernel, out_c, attrs in CONVS:
        node = _conv(shape, kernel, out_c, **attrs)
        assert dsp.conv_scratch_bytes(node) == _c_size(library, "mcu_conv2d_s8_dsp_scratch_size", node)
        assert mve.conv_scratch_bytes(node) == _c_size(library, "mcu_conv2d_s8_mve_scratch_size", node)
        checked += 2
    for shape, kernel, attrs in DEPTHWISE:
        node = _conv(shape, kernel, shape[3], group=shape[3], **attrs)
        assert mve.depthwise_scratch_bytes(node) == _c_size(library, "mcu_depthwise_conv2d_s8_mve_scratch_size", node)
        checked += 1
    for depth in (16, 20, 33):
        node = _gemm(depth)
        assert mve.fc_scratch_bytes(node) == _c_size(library, "mcu_fully_connected_s8_mve_scratch_size", node)
        checked += 1
    for dtype, suffix in ((DType.INT8, "s8"), (DType.INT16, "s16")):
        node = _transpose_conv((1, 3, 4, 6), dtype)
        assert reference_scratch_bytes(node) == _c_size(library, f"mcu_transpose_conv2d_{suffix}_scratch_size", node,
                                                        with_params=False) == 6 * 8 * 5 * (4 if suffix == "s8" else 8)
        checked += 1
    assert checked == 2 * len(CONVS) + len(DEPTHWISE) + 3 + 2
