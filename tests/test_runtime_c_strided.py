"""The out c_stride of the C runtime (mcu_dims.c_stride, runtime/include/mcu_runtime.h): the
kernels that honour it (kernels/strided_output.py, reference variant) write pixel p, channel k
at element p * c_stride + k of ``out`` - the channel slice of a wider buffer - and leave the
other elements untouched; every other kernel, and every strided input, is refused.

Recipe: one-node graph, the C kernel's dense output (ctypes, runtime/tests/c_runners.py), then
the same call into channel slice ``[k, k + c)`` of a wider buffer filled with a sentinel: the
slice equals the dense output bit for bit, the rest is still the sentinel. The optimised
variants (src/dsp, src/mve, built for the host) the same way, with their prepared constants,
against the reference kernel's dense output; end to end (generated code, QEMU) in
test_concat_channel_slices.py.
"""
from __future__ import annotations

import shutil
import sys

import numpy as np
import pytest

from conftest import REPO
from mcudeploy.codegen.kernel_table import kernel_function
from mcudeploy.ir import QuantParams
from mcudeploy.kernels.catalogue import variant_named
from mcudeploy.kernels.strided_output import STRIDED_OUTPUT, strided_output_refusal
from mcudeploy.reference.int_kernels import prepare_node
from test_runtime_c import per_tensor, random_tensor, runtime, single_node  # noqa: F401

sys.path.insert(0, str(REPO / "runtime" / "tests"))
from c_runners import _channel_quant, _params, _quant, out_dims, run_node  # noqa: E402
from mcu_ctypes import CallError, Context, Dims, Runtime, build_library, dims  # noqa: E402

SENTINEL = 0x5A
RNG_SEED = 5


def _conv_case(rng, dtype, group: int, channels: int = 8, out_channels: int = 12):
    x = random_tensor(rng, dtype, (1, 7, 6, channels))
    per_group = channels // group
    out_channels = channels if group == channels else out_channels
    w = rng.integers(-127, 128, (out_channels, 3, 3, per_group)).astype(np.int8)
    w_quant = QuantParams(np.linspace(0.01, 0.03, out_channels).astype(np.float32), np.zeros(out_channels, int), 0)
    bias = rng.integers(-900, 900, out_channels).astype(np.int64 if dtype == np.int16 else np.int32)
    zero = 0 if dtype == np.int16 else 3
    return single_node("Conv", [(x, per_tensor(0.05, zero), False), (w, w_quant, True), (bias, None, True)],
                       {"layout": "NHWC", "group": group, "pads": (1, 1, 1, 1), "strides": (1, 2),
                        "activation_min": -2.0}, per_tensor(0.1, -zero))


def _pool_case(rng, op: str):
    x = random_tensor(rng, np.int8, (1, 6, 6, 5))
    attrs = {"layout": "NHWC", "kernel_shape": (3, 3), "strides": (2, 2), "pads": (1, 1, 1, 1)}
    return single_node(op, [(x, per_tensor(0.1, -4), False)], attrs, per_tensor(0.1, -4))


def _resize_case(rng):
    x = random_tensor(rng, np.int8, (1, 3, 4, 6))
    return single_node("Resize", [(x, per_tensor(0.1, 2), False)],
                       {"sizes": (1, 6, 8, 6), "mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                        "nearest_mode": "floor"}, per_tensor(0.1, 2))


def _slice_case(rng, dtype, steps: tuple[int, int, int]):
    """A tile's slice of a wider tensor (rows, columns, channels), as a tiled U-Net level reads
    a spilled skip tensor into its decoder concat."""
    x = random_tensor(rng, dtype, (1, 9, 8, 7))
    starts = tuple(1 if step > 0 else -2 for step in steps)
    ends = tuple(7 if step > 0 else -100 for step in steps)
    return single_node("Slice", [(x, per_tensor(0.1, 0), False)],
                       {"starts": starts, "ends": ends, "axes": (1, 2, 3), "steps": steps}, per_tensor(0.1, 0))


def _binary_case(rng, op: str, broadcast: bool = False, shared: bool = False):
    a = random_tensor(rng, np.int8, (1, 4, 5, 6))
    b = random_tensor(rng, np.int8, (1, 1, 5, 6) if broadcast else (1, 4, 5, 6))
    quants = [per_tensor(0.1, 1)] * 3 if shared else [per_tensor(0.1, 1), per_tensor(0.2, -3), per_tensor(0.25, 2)]
    return single_node(op, [(a, quants[0], False), (b, quants[1], False)], {}, quants[2])


CASES = {
    "conv-s8": lambda rng: _conv_case(rng, np.int8, 1),
    "conv-grouped-s8": lambda rng: _conv_case(rng, np.int8, 2),
    "depthwise-s8": lambda rng: _conv_case(rng, np.int8, 8),
    "conv-s16": lambda rng: _conv_case(rng, np.int16, 1),
    "depthwise-s16": lambda rng: _conv_case(rng, np.int16, 8),
    "max-pool": lambda rng: _pool_case(rng, "MaxPool"),
    "average-pool": lambda rng: _pool_case(rng, "AveragePool"),
    "resize-nearest": _resize_case,
    "add": lambda rng: _binary_case(rng, "Add"),
    "sub-broadcast": lambda rng: _binary_case(rng, "Sub", broadcast=True),
    "mul": lambda rng: _binary_case(rng, "Mul"),
    "slice-rows-s8": lambda rng: _slice_case(rng, np.int8, (1, 1, 1)),
    "slice-strided-s16": lambda rng: _slice_case(rng, np.int16, (2, -1, -2)),
}


def _run(library: Runtime, graph, feeds, out=None) -> np.ndarray:
    node = graph.nodes[0]
    inputs = [None if v is None else (v.const if v.const is not None else feeds[v.name]) for v in node.inputs]
    return run_node(library, node, prepare_node(node), inputs, out)


@pytest.mark.parametrize("offset, extra", [(0, 3), (5, 0), (4, 9)])
@pytest.mark.parametrize("case", CASES)
def test_strided_output_is_the_dense_output_scattered_into_its_slice(runtime, case, offset, extra):  # noqa: F811
    graph, feeds = CASES[case](np.random.default_rng(RNG_SEED))
    node = graph.nodes[0]
    assert STRIDED_OUTPUT["reference"][node.op](node)    # the table says this kernel honours it
    dense = _run(runtime, graph, feeds)
    assert len(np.unique(dense)) > 3
    *pixels, channels = dense.shape
    wide = np.full((*pixels, offset + channels + extra), SENTINEL, dtype=dense.dtype)
    view = wide[..., offset:offset + channels]
    _run(runtime, graph, feeds, out=view)
    assert view.tobytes() == dense.tobytes()
    outside = np.delete(wide, np.s_[offset:offset + channels], axis=-1)
    assert np.all(outside == SENTINEL)


def test_kernels_without_the_stride_refuse_a_strided_output(runtime):  # noqa: F811
    graph, feeds = _binary_case(np.random.default_rng(RNG_SEED), "Max", shared=True)
    assert "Max" not in STRIDED_OUTPUT["reference"]
    dense = _run(runtime, graph, feeds)
    wide = np.zeros((1, 4, 5, 10), dtype=np.int8)
    with pytest.raises(CallError, match="status 1"):
        _run(runtime, graph, feeds, out=wide[..., 2:8])
    assert np.all(wide == 0) and len(np.unique(dense)) > 3


def test_a_strided_input_or_a_stride_below_c_is_refused(runtime):  # noqa: F811
    graph, feeds = CASES["max-pool"](np.random.default_rng(RNG_SEED))
    node = graph.nodes[0]
    x = feeds[node.inputs[0].name]
    out = np.zeros(node.outputs[0].shape, dtype=np.int8)
    params = _params(node, prepare_node(node))
    for in_dims, bad_out in ((Dims(1, 6, 6, 5, 7), Dims(1, 3, 3, 5)), (Dims(1, 6, 6, 5), Dims(1, 3, 3, 5, 4))):
        assert runtime.status(kernel_function(node), None, params, in_dims, x, bad_out, out) == 1
    assert runtime.status(kernel_function(node), None, params, Dims(1, 6, 6, 5, 5), x, Dims(1, 3, 3, 5, 5),
                          out) == 0       # c_stride == c: dense, accepted


# -- the optimised variants (src/dsp, src/mve: their portable C on the host) ---------------------
@pytest.fixture(scope="module")
def variant_runtime(tmp_path_factory) -> Runtime:
    if shutil.which("gcc") is None:
        pytest.skip("host gcc not found")
    return Runtime(build_library(tmp_path_factory.mktemp("variants") / "libmcu_variants.so", variants=True))


def _variant_call(library: Runtime, variant, graph, feeds, out: np.ndarray) -> None:
    """The variant's C function on the node, with the constants its ``prepare_constants``
    gives (re-ordered weights, folded bias) and its scratch bytes."""
    node = graph.nodes[0]
    params = prepare_node(node)
    inputs = [None if v is None else (v.const if v.const is not None else feeds[v.name]) for v in node.inputs]
    inputs += [None] * (3 - len(inputs))
    prepared = variant.prepare_constants(node, params) if variant.prepare_constants else {}
    for index, array in prepared.items():
        inputs[index] = np.ascontiguousarray(array)
    scratch = np.zeros(max(variant.scratch_bytes(node), 4) + 16, dtype=np.uint8)
    aligned = scratch[(-scratch.ctypes.data) % 16:]
    context = Context(aligned.ctypes.data, aligned.size)
    function = kernel_function(node) + variant.function_suffix
    x, w, bias = inputs[0], inputs[1], inputs[2]
    keep: list = []
    if node.op == "Conv":
        library.call(function, context, _params(node, params), _channel_quant(params, keep), dims(x.shape), x,
                     dims(node.inputs[1].shape), w, None if bias is None else bias.astype(np.int32), out_dims(out),
                     out)
    elif node.op in ("Add", "Mul"):
        library.call(function, context, _params(node, params), _quant(node, params), dims(x.shape), x,
                     dims(w.shape), w, out_dims(out), out)
    else:
        library.call(function, context, _params(node, params), dims(x.shape), x, out_dims(out), out)


VARIANT_CASES = [("dsp-conv", "conv-s8"), ("dsp-depthwise", "depthwise-s8"), ("dsp-pool", "max-pool"),
                 ("dsp-elementwise", "add"), ("dsp-elementwise", "mul"),
                 ("mve-conv", "conv-s8"), ("mve-depthwise", "depthwise-s8"), ("mve-pool", "average-pool"),
                 ("mve-elementwise", "add"), ("mve-elementwise", "mul")]


@pytest.mark.parametrize("offset, extra", [(0, 5), (4, 4)])
@pytest.mark.parametrize("name, case", VARIANT_CASES)
def test_variants_write_the_strided_output_of_the_reference(variant_runtime, runtime, name, case, offset,  # noqa: F811
                                                             extra):
    graph, feeds = CASES[case](np.random.default_rng(RNG_SEED))
    node = graph.nodes[0]
    variant = variant_named(node.op, name)
    assert variant.accepts(node) is None and strided_output_refusal(name, node) is None
    dense = _run(runtime, graph, feeds)                       # the reference kernel, dense
    *pixels, channels = dense.shape
    wide = np.full((*pixels, offset + channels + extra), SENTINEL, dtype=dense.dtype)
    view = wide[..., offset:offset + channels]
    _variant_call(variant_runtime, variant, graph, feeds, view)
    assert view.tobytes() == dense.tobytes()
    assert np.all(np.delete(wide, np.s_[offset:offset + channels], axis=-1) == SENTINEL)
