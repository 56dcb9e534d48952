"""A copying Concat written over its dead input (kernels/overlap.py ``concat_proof``): the C
kernel copies with memmove, so one block's copy may overlap its own source, and the proved
distance is ``(B - 1)(O - L) + prefix`` (B outer blocks, O output bytes per block, L the
input's, prefix the earlier inputs' bytes in a block).

Recipe: one Concat node built in code; the distance by hand; then the C kernel (ctypes, the
host build of runtime/src) run with the output placed exactly ``distance`` bytes below the
input inside one buffer (the other inputs elsewhere) equals numpy's concatenation, and one
byte closer corrupts it (the bound is tight). The planner's overlap pair for a copying Concat
is that distance.
"""
from __future__ import annotations

import ctypes
import sys

import numpy as np
import pytest

from conftest import REPO
from mcudeploy.arithmetic import fixed_point as fp
from mcudeploy.ir import DType, Graph, QuantParams
from mcudeploy.kernels.overlap import overlap_distance
from test_runtime_c import runtime  # noqa: F401

sys.path.insert(0, str(REPO / "runtime" / "tests"))
from mcu_ctypes import ConcatParams, ConcatQuant, Dims, RequantizeQuant, dims  # noqa: E402

# (input shapes NHWC, axis): a U-Net-like channel concat, three channel inputs, an H concat (B = 1)
CASES = [([(1, 3, 4, 5), (1, 3, 4, 7)], 3), ([(1, 2, 3, 4), (1, 2, 3, 2), (1, 2, 3, 3)], 3),
         ([(1, 2, 4, 3), (1, 3, 4, 3)], 1)]


def _concat(shapes, axis, requantize: bool = False):
    graph = Graph("concat")
    quant = QuantParams(np.array([0.1], np.float32), np.array([0]))
    inputs = [graph.add_input(f"x{i}", DType.from_numpy(np.dtype(np.int8)), shape,
                              quant=QuantParams(np.array([0.1 * (2 if requantize and i == 0 else 1)], np.float32),
                                                np.array([0])))
              for i, shape in enumerate(shapes)]
    node = graph.add_node("Concat", inputs, {"axis": axis}, name="concat")
    node.outputs[0].quant = quant
    graph.outputs = [node.outputs[0]]
    return graph, node


def _by_hand(shapes, axis, index):
    blocks = int(np.prod(shapes[0][:axis]))
    inner = int(np.prod(shapes[0][axis + 1:]))
    length = shapes[index][axis] * inner
    block = sum(shape[axis] for shape in shapes) * inner
    prefix = sum(shape[axis] for shape in shapes[:index]) * inner
    return (blocks - 1) * (block - length) + prefix


@pytest.mark.parametrize("shapes, axis", CASES)
def test_distance_by_hand(shapes, axis):
    graph, node = _concat(shapes, axis)
    got = [overlap_distance(node, value) for value in node.inputs]
    assert got == [_by_hand(shapes, axis, i) for i in range(len(shapes))]
    if axis == 3:   # U-Net style, 2 inputs of 5 and 7 channels over 12 pixels: 11 * 7 and 11 * 5 + 5
        assert shapes != CASES[0][0] or got == [77, 60]


def _run(runtime, shapes, axis, index, distance, requantize=False):  # noqa: F811
    """Run mcu_concat_s8 with the output ``distance`` bytes below input ``index`` in one buffer."""
    rng = np.random.default_rng(7)
    arrays = [rng.integers(-128, 128, shape).astype(np.int8) for shape in shapes]
    out_shape = list(shapes[0])
    out_shape[axis] = sum(shape[axis] for shape in shapes)
    out_bytes = int(np.prod(out_shape))
    buffer = np.zeros(distance + out_bytes + arrays[index].size + 64, np.int8)
    start = distance + 32                   # the input's byte offset; the output starts at start - distance
    buffer[start:start + arrays[index].size] = arrays[index].reshape(-1)
    separate = [np.ascontiguousarray(a) for a in arrays]
    base = buffer.ctypes.data
    pointers = (ctypes.c_void_p * len(shapes))(*[base + start if i == index else a.ctypes.data
                                                 for i, a in enumerate(separate)])
    in_dims = (Dims * len(shapes))(*[dims(shape) for shape in shapes])
    quant = (ConcatQuant * len(shapes))(*[ConcatQuant(int(requantize), RequantizeQuant(0, 0, 1 << 30, 0))
                                          for _ in shapes])
    function = runtime.library.mcu_concat_s8
    function.restype = ctypes.c_int32
    status = function(None, ctypes.byref(ConcatParams(axis, len(shapes))), quant, in_dims, pointers,
                      ctypes.byref(dims(tuple(out_shape))), ctypes.c_void_p(base + start - distance))
    assert status == 0
    got = buffer[start - distance:start - distance + out_bytes].reshape(out_shape)
    if requantize:   # multiplier 2^30, shift 0: x / 2 (TFLite's rounding, the same for every input)
        arrays = [fp.multiply_by_quantized_multiplier(a.astype(np.int64), 1 << 30, 0).astype(np.int8)
                  for a in arrays]
    return got, np.concatenate(arrays, axis=axis)


@pytest.mark.parametrize("requantize", [False, True])
@pytest.mark.parametrize("shapes, axis", CASES)
def test_the_c_kernel_is_exact_at_the_proved_distance_and_not_one_byte_closer(runtime, shapes, axis,  # noqa: F811
                                                                               requantize):
    graph, node = _concat(shapes, axis)
    for index, value in enumerate(node.inputs):
        distance = overlap_distance(node, value)
        got, expected = _run(runtime, shapes, axis, index, distance, requantize)
        assert np.array_equal(got, expected), (index, distance)
        if distance > 0:
            got, expected = _run(runtime, shapes, axis, index, distance - 1, requantize)
            assert not np.array_equal(got, expected), (index, distance)


def test_the_planner_places_a_copying_concat_at_the_memmove_distance():
    """U-Net-like channel concat, copied (concat in place off): the overlap pair the plan uses
    is the proved memmove distance, L bytes less than the memcpy rule's B L (old formula
    max((B - 1)(O - L) + prefix + L, B (O - L)))."""
    from mcudeploy.plan.memory_plan import plan_memory
    shapes, axis = [(1, 4, 4, 8), (1, 4, 4, 8)], 3
    graph, node = _concat(shapes, axis)
    plan = plan_memory(graph, alignment=1, concat_in_place=False)
    pairs = [pair for pair in plan.pairs if pair.node == node.name]
    assert len(pairs) == 1
    index = [value.name for value in node.inputs].index(pairs[0].input)
    assert pairs[0].distance == _by_hand(shapes, axis, index) == (16 - 1) * 8 + 8 * index
    out, source = plan.tensors[node.outputs[0].name], plan.tensors[pairs[0].input]
    assert source.offset - out.offset >= pairs[0].distance
    assert plan.arena_bytes == 256 + 128   # the output (over its dead input) + the other input
