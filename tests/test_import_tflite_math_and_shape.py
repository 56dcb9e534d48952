"""The TFLite ops added for issue 15 (float) against LiteRT, and import-time folding of the
shape computations Keras exports write into graphs (SHAPE -> STRIDED_SLICE -> PACK ->
RESHAPE, TILE / FILL by computed counts): after import no shape arithmetic is left, and the
numbers match LiteRT."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcudeploy.importers.tflite.importer import import_tflite
from mcudeploy.ir import verify
from mcudeploy.reference import run_float
from test_import_tflite import interpreter, weights
from tflite_builders import Op, Tensor, build_model

INT32, INT64 = 2, 4  # tflite TensorType codes


def i32(*values) -> np.ndarray:
    return np.array(values, dtype=np.int32)


def one_op(op: str, operands: list, outputs: list, options: dict | None = None) -> bytes:
    """A tuple operand is a float graph input of that shape, an array a constant; an output
    is a shape or ``(shape, dtype)``."""
    tensors, graph_inputs, op_inputs = [], [], []
    for position, operand in enumerate(operands):
        if isinstance(operand, tuple):
            tensors.append(Tensor(f"input{position}", operand))
            graph_inputs.append(len(tensors) - 1)
        else:
            tensors.append(Tensor(f"constant{position}", operand.shape, str(operand.dtype), data=operand))
        op_inputs.append(len(tensors) - 1)
    first = len(tensors)
    for i, output in enumerate(outputs):
        shape, dtype = output if isinstance(output[0], tuple) else (output, "float32")
        tensors.append(Tensor(f"output{i}", shape, dtype))
    outs = list(range(first, len(tensors)))
    return build_model(tensors, [Op(op, op_inputs, outs, options or {})], graph_inputs, outs)


X = (1, 4, 5, 3)
CASES = {  # name: (op, operands, outputs, options, IR ops after import)
    "maximum": ("MAXIMUM", [X, weights(3)], [X], {}, ["Max"]),
    "minimum": ("MINIMUM", [X, X], [X], {}, ["Min"]),
    "squared_difference": ("SQUARED_DIFFERENCE", [X, (1, 1, 5, 3)], [X], {}, ["SquaredDifference"]),
    "rsqrt": ("RSQRT", [X], [X], {}, ["Rsqrt"]),
    "sqrt": ("SQRT", [X], [X], {}, ["Sqrt"]),
    "exp": ("EXP", [X], [X], {}, ["Exp"]),
    "log": ("LOG", [X], [X], {}, ["Log"]),
    "abs": ("ABS", [X], [X], {}, ["Abs"]),
    "neg": ("NEG", [X], [X], {}, ["Mul"]),
    "floor": ("FLOOR", [X], [X], {}, ["Floor"]),
    "sin": ("SIN", [X], [X], {}, ["Sin"]),
    "elu": ("ELU", [X], [X], {}, ["Elu"]),
    "gelu_tanh": ("GELU", [X], [X], {"approximate": True}, ["Gelu"]),
    "log_softmax": ("LOG_SOFTMAX", [(2, 7)], [(2, 7)], {}, ["LogSoftmax"]),
    "lrn": ("LOCAL_RESPONSE_NORMALIZATION", [(1, 3, 3, 8)], [(1, 3, 3, 8)],
            {"radius": 2, "bias": 1.5, "alpha": 0.3, "beta": 0.75}, ["LRN"]),
    "reduce_max": ("REDUCE_MAX", [X, i32(1, 2)], [(1, 1, 1, 3)], {"keep_dims": True}, ["ReduceMax"]),
    "reduce_min": ("REDUCE_MIN", [X, i32(-1)], [(1, 4, 5)], {"keep_dims": False}, ["ReduceMin"]),
    "sum": ("SUM", [X, i32(0, 3)], [(4, 5)], {"keep_dims": False}, ["ReduceSum"]),
    "reduce_prod": ("REDUCE_PROD", [X, i32(2)], [(1, 4, 1, 3)], {"keep_dims": True}, ["ReduceProd"]),
    "arg_max_int64": ("ARG_MAX", [X, i32(3)], [((1, 4, 5), "int64")], {"output_type": INT64}, ["ArgMax"]),
    "arg_min_int32": ("ARG_MIN", [X, i32(1)], [((1, 5, 3), "int32")], {"output_type": INT32}, ["ArgMin"]),
    "pack_axis1": ("PACK", [(2, 3), (2, 3), (2, 3)], [(2, 3, 3)], {"values_count": 3, "axis": 1},
                   ["Unsqueeze", "Unsqueeze", "Unsqueeze", "Concat"]),
    "unpack": ("UNPACK", [(3, 2, 4)], [(3, 4), (3, 4)], {"num": 2, "axis": 1},
               ["Slice", "Reshape", "Slice", "Reshape"]),
    "tile": ("TILE", [(2, 3), i32(2, 3)], [(4, 9)], {}, ["Tile"]),
    "gather": ("GATHER", [(4, 5), i32(3, 0, 3)], [(4, 3)], {"axis": 1}, ["Gather"]),
}
POSITIVE = {"rsqrt", "sqrt", "log"}


def run_litert(data: bytes, feeds: list[np.ndarray]) -> list[np.ndarray]:
    runtime = interpreter(data)
    for detail, array in zip(runtime.get_input_details(), feeds):
        runtime.set_tensor(detail["index"], array)
    runtime.invoke()
    return [runtime.get_tensor(detail["index"]) for detail in runtime.get_output_details()]


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_matches_litert(case):
    op, operands, outputs, options, ir_ops = CASES[case]
    data = one_op(op, operands, outputs, options)
    graph = import_tflite(Path(f"{case}.tflite"), data, input_shapes={})
    verify(graph)
    assert [node.op for node in graph.nodes] == ir_ops
    rng = np.random.default_rng(len(case))
    feeds = [rng.uniform(0.1 if case in POSITIVE else -2, 2, v.shape).astype(np.float32) for v in graph.inputs]
    ours = run_float(graph, {v.name: array for v, array in zip(graph.inputs, feeds)})
    for value, reference in zip(graph.outputs, run_litert(data, feeds)):
        assert ours[value.name].dtype == reference.dtype
        np.testing.assert_allclose(ours[value.name], reference, rtol=1e-4, atol=1e-5)


def keras_reshape_head() -> bytes:
    """``y = RESHAPE(x, PACK(STRIDED_SLICE(SHAPE(x), [0], [1], shrink), -1, 3))`` then TILE by
    ``FILL([2], 1) * [1, 2]`` and a CAST'ed RANGE added: the shape arithmetic of Keras
    exports (SSD box heads)."""
    tensors = [Tensor("x", (1, 4, 4, 6), shape_signature=(-1, 4, 4, 6)), Tensor("shape", (4,), "int32"),
               Tensor("begin", (1,), "int32", data=i32(0)), Tensor("end", (1,), "int32", data=i32(1)),
               Tensor("stride", (1,), "int32", data=i32(1)), Tensor("batch", (), "int32"),
               Tensor("minus_one", (), "int32", data=np.array(-1, np.int32)),
               Tensor("three", (), "int32", data=np.array(3, np.int32)), Tensor("packed", (3,), "int32"),
               Tensor("boxes", (1, 32, 3)),
               Tensor("dims", (1,), "int32", data=i32(3)), Tensor("one", (), "int32", data=np.array(1, np.int32)),
               Tensor("ones", (3,), "int32"), Tensor("factors", (3,), "int32", data=i32(1, 2, 1)),
               Tensor("multiples", (3,), "int32"), Tensor("tiled", (1, 64, 3)),
               Tensor("start", (), "int32", data=np.array(0, np.int32)),
               Tensor("limit", (), "int32", data=np.array(3, np.int32)), Tensor("range", (3,), "int32"),
               Tensor("range_float", (3,), "float32"), Tensor("y", (1, 64, 3))]
    ops = [Op("SHAPE", [0], [1], {"out_type": INT32}),
           Op("STRIDED_SLICE", [1, 2, 3, 4], [5], {"shrink_axis_mask": 1}),
           Op("PACK", [5, 6, 7], [8], {"values_count": 3, "axis": 0}),
           Op("RESHAPE", [0, 8], [9]),
           Op("FILL", [10, 11], [12]), Op("MUL", [12, 13], [14]),
           Op("TILE", [9, 14], [15]),
           Op("RANGE", [16, 17, 11], [18]), Op("CAST", [18], [19], {"in_data_type": INT32, "out_data_type": 0}),
           Op("ADD", [15, 19], [20])]
    return build_model(tensors, ops, [0], [20])


def test_keras_shape_computations_fold_away_and_match_litert():
    data = keras_reshape_head()
    graph = import_tflite(Path("keras_head.tflite"), data, input_shapes={})
    verify(graph)
    assert [node.op for node in graph.nodes] == ["Reshape", "Tile", "Add"]
    reshape, tile, add = graph.nodes
    assert reshape.attrs["shape"] == (1, 32, 3) and tile.attrs["repeats"] == (1, 2, 1)
    assert add.inputs[1].is_constant and add.inputs[1].const.tolist() == [0.0, 1.0, 2.0]
    x = np.random.default_rng(0).standard_normal((1, 4, 4, 6)).astype(np.float32)
    (reference,) = run_litert(data, [x])
    assert np.array_equal(run_float(graph, {"x": x})["y"], reference)


def test_shape_follows_a_changed_input_shape():
    """With ``--input-shape`` the SHAPE constant is the new shape, and the reshape follows."""
    graph = import_tflite(Path("keras_head.tflite"), keras_reshape_head(), input_shapes={"x": (2, 4, 4, 6)})
    verify(graph)
    assert graph.nodes[0].attrs["shape"] == (2, 32, 3) and graph.outputs[0].shape == (2, 64, 3)


def test_computed_tile_count_is_refused_with_the_reason():
    """TILE by a count computed from the data has no static shape: refused, naming the op."""
    tensors = [Tensor("x", (2, 3)), Tensor("m", (2,), "int32"), Tensor("y", (2, 3))]
    data = build_model(tensors, [Op("TILE", [0, 1], [2])], [0, 1], [2])
    with pytest.raises(Exception, match="multiples .* computed at run time"):
        import_tflite(Path("tile.tflite"), data, input_shapes={})


def test_unpack_and_gather_of_a_shape_fold():
    """``RESHAPE(x, PACK(n, h * w, GATHER(SHAPE(x), [3])))`` with n, h, w from UNPACK(SHAPE(x))."""
    tensors = [Tensor("x", (1, 4, 4, 6)), Tensor("shape", (4,), "int32")] + \
        [Tensor(f"d{i}", (), "int32") for i in range(4)] + \
        [Tensor("hw", (), "int32"), Tensor("index", (1,), "int32", data=i32(3)), Tensor("c", (1,), "int32"),
         Tensor("c_scalar", (), "int32"), Tensor("packed", (3,), "int32"), Tensor("y", (1, 16, 6))]
    ops = [Op("SHAPE", [0], [1], {"out_type": INT32}), Op("UNPACK", [1], [2, 3, 4, 5], {"num": 4, "axis": 0}),
           Op("MUL", [3, 4], [6]), Op("GATHER", [1, 7], [8], {"axis": 0}),
           Op("RESHAPE", [8], [9]), Op("PACK", [2, 6, 9], [10], {"values_count": 3, "axis": 0}),
           Op("RESHAPE", [0, 10], [11])]
    data = build_model(tensors, ops, [0], [11])
    graph = import_tflite(Path("unpack_gather.tflite"), data, input_shapes={})
    verify(graph)
    assert [node.op for node in graph.nodes] == ["Reshape"] and graph.nodes[0].attrs["shape"] == (1, 16, 6)
    x = np.random.default_rng(1).standard_normal((1, 4, 4, 6)).astype(np.float32)
    assert np.array_equal(run_float(graph, {"x": x})["y"], run_litert(data, [x])[0])


def test_quantized_arithmetic_on_constants_is_not_folded():
    """ADD of two int8 constants would need the quantized kernel, not the float one: kept;
    a RESHAPE of an int8 constant only moves the raw integers: folded."""
    quant = ([0.1], [2], 0)
    tensors = [Tensor("x", (1, 4), "int8", quant=quant),
               Tensor("a", (2, 2), "int8", data=np.array([[1, 2], [3, 4]], np.int8), quant=quant),
               Tensor("new_shape", (2,), "int32", data=i32(1, 4)), Tensor("a_flat", (1, 4), "int8", quant=quant),
               Tensor("b", (1, 4), "int8", data=np.array([[5, -6, 7, 8]], np.int8), quant=quant),
               Tensor("sum", (1, 4), "int8", quant=quant), Tensor("y", (1, 4), "int8", quant=quant)]
    ops = [Op("RESHAPE", [1, 2], [3]), Op("ADD", [3, 4], [5]), Op("ADD", [0, 5], [6])]
    graph = import_tflite(Path("quantized_constants.tflite"), build_model(tensors, ops, [0], [6]), input_shapes={})
    verify(graph)
    assert [node.op for node in graph.nodes] == ["Add", "Add"]
    first = graph.nodes[0]
    assert first.inputs[0].is_constant and first.inputs[0].shape == (1, 4) and first.inputs[0].quant is not None
