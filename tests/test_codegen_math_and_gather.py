"""Generated C code for the kernels added in issue 15 (Max, Min, SquaredDifference,
ReduceMax, ReduceMin, ReduceSum, ArgMax, ArgMin, Gather, Tile, Expand, Abs, Rsqrt,
LogSoftmax), built on the host with ASan + UBSan and compared byte for byte with the
integer reference."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from codegen_graphs import q
from mcudeploy.codegen import ProjectOptions, generate_files
from mcudeploy.codegen.kernel_calls import EMITTERS
from mcudeploy.driver import deploy
from mcudeploy.ir import DType, Graph, verify
from mcudeploy.reference.int_executor import run_int
from mcudeploy.validate.c_runner import run_host

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("make") is None,
                                reason="host gcc / make not installed")
NEW_OPS = {"Max", "Min", "SquaredDifference", "ReduceMax", "ReduceMin", "ReduceSum", "ArgMax", "ArgMin",
           "Gather", "Tile", "Expand", "Abs", "Rsqrt", "LogSoftmax"}


def _node(graph: Graph, op: str, inputs, attrs=None, quant="same"):
    out = graph.add_node(op, inputs, attrs or {}, name=f"{op.lower()}_{len(graph.nodes)}").outputs[0]
    out.quant = inputs[0].quant if quant == "same" else quant
    return out


def math_and_gather_graph() -> Graph:
    rng = np.random.default_rng(15)
    graph = Graph("more_ops")
    x = graph.add_input("x", DType.INT8, (1, 6, 6, 8), quant=q(0.05, -3), layout="NHWC")
    bound = graph.add_constant("bound", rng.integers(-60, 60, 8).astype(np.int8), quant=q(0.05, -3))
    upper = _node(graph, "Max", [x, bound])
    lower = _node(graph, "Min", [x, bound])
    squared = _node(graph, "SquaredDifference", [upper, lower], quant=q(1.0, -128))
    peak = _node(graph, "ReduceMax", [squared], {"axes": (1, 2), "keepdims": 1})
    low = _node(graph, "ReduceMin", [x], {"axes": (3,), "keepdims": 0})
    total = _node(graph, "ReduceSum", [x], {"axes": (2,), "keepdims": 0}, quant=q(0.5, 0))
    where = graph.add_constant("rows", np.array([5, 0, -4], np.int64))
    picked = _node(graph, "Gather", [total, where], {"axis": 1})
    tiled = _node(graph, "Tile", [picked], {"repeats": (1, 2, 1)})
    tiled = _node(graph, "Expand", [tiled], {"shape": (2, 1, 1)})
    arg_max = _node(graph, "ArgMax", [x], {"axis": 3, "keepdims": 0, "output_dtype": "int32"}, quant=None)
    arg_min = _node(graph, "ArgMin", [x], {"axis": 1, "keepdims": 1, "select_last_index": 1,
                                           "output_dtype": "int32"}, quant=None)
    magnitude = _node(graph, "Abs", [x], quant=q(0.04, -128))
    inverse = _node(graph, "Rsqrt", [magnitude], quant=q(0.05, -100))
    log_probabilities = _node(graph, "LogSoftmax", [x], {"axis": -1}, quant=q(16 / 256, 127))
    graph.outputs = [peak, low, tiled, arg_max, arg_min, inverse, log_probabilities]
    verify(graph)
    return graph


def test_new_kernels_bit_exact_on_host():
    graph = math_and_gather_graph()
    assert {node.op for node in graph.nodes} == NEW_OPS and NEW_OPS <= set(EMITTERS)
    rng = np.random.default_rng(3)
    feeds = {"x": rng.integers(-128, 128, (4, 1, 6, 6, 8)).astype(np.int8)}
    result = run_host(deploy(graph), feeds, sanitize=True)
    reference = run_int(graph, feeds, batch=True)
    for value in graph.outputs:
        assert result.outputs[value.name].dtype == reference[value.name].dtype
        assert np.array_equal(result.outputs[value.name], reference[value.name]), value.name
        assert len(np.unique(reference[value.name])) > 2, value.name


def test_calls_name_the_new_runtime_kernels():
    network = generate_files(deploy(math_and_gather_graph()), ProjectOptions())["network.c"]
    for function in ("mcu_maximum_s8", "mcu_minimum_s8", "mcu_squared_difference_s8", "mcu_reduce_max_s8",
                     "mcu_reduce_min_s8", "mcu_mean_s8", "mcu_gather", "mcu_tile", "mcu_arg_max_s8",
                     "mcu_arg_min_s8", "mcu_abs_s8", "mcu_rsqrt_s8", "mcu_log_softmax_s8"):
        assert f"{function}(" in network, function
