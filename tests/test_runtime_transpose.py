"""mcu_transpose (runtime/src/transpose.c: axes reduced, rows copied or 2-D planes copied as
strided runs along their longer side, 4 bytes per word for int8) against numpy's transpose:
ranks 2-4, the layout perms (0, 2, 3, 1) / (0, 3, 1, 2) and the others, odd and size-1
axes, 1-, 2- and 4-byte elements, on the host and under QEMU (Cortex-M4 / M55)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from kernel_cases import q
from mcudeploy.driver import deploy
from mcudeploy.ir import DType, Graph, verify
from mcudeploy.options import DeploymentOptions
from mcudeploy.validate.generated_code import run_generated
from test_codegen_qemu import needs_toolchain

DTYPES = {DType.INT8: np.int8, DType.INT16: np.int16, DType.INT32: np.int32}


def transpose_cases(seed: int) -> list[tuple[tuple[int, ...], tuple[int, ...], DType]]:
    """The MobileNetV2 input (3x128x128 -> NHWC, shrunk), NHWC -> NCHW, every 4-D perm once
    on odd sizes with a size-1 axis somewhere, and ranks 2 / 3; element types in turn."""
    rng = np.random.default_rng(seed)
    types = list(DTYPES)
    cases = [((1, 3, 33, 17), (0, 2, 3, 1), DType.INT8), ((1, 13, 9, 3), (0, 3, 1, 2), DType.INT8),
             ((1, 4, 10, 7), (0, 2, 3, 1), DType.INT16), ((1, 11, 6, 5), (0, 3, 1, 2), DType.INT32),
             ((37, 5), (1, 0), DType.INT8), ((3, 9, 7), (2, 0, 1), DType.INT16), ((6, 1, 7), (1, 2, 0), DType.INT8)]
    for index, perm in enumerate(itertools.permutations(range(4))):
        shape = [int(rng.choice([1, 2, 3, 5, 6, 9])) for _ in range(4)]
        cases.append((tuple(shape), perm, types[index % 3]))
    return cases


def transpose_graph(seed: int) -> tuple[Graph, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """One graph, a Transpose branch per case; feeds and numpy's expected outputs."""
    rng = np.random.default_rng(seed)
    graph, feeds, expected = Graph("transposes"), {}, {}
    for index, (shape, perm, dtype) in enumerate(transpose_cases(seed)):
        quant = None if dtype == DType.INT32 else q(0.05, 0 if dtype == DType.INT16 else -128)
        x = graph.add_input(f"x{index}", dtype, shape, quant=quant)
        node = graph.add_node("Transpose", [x], {"perm": perm}, name=f"transpose{index}")
        node.outputs[0].quant = quant
        info = np.iinfo(DTYPES[dtype])
        data = rng.integers(info.min, info.max, (1, *shape), endpoint=True).astype(DTYPES[dtype])
        feeds[x.name] = data
        expected[node.outputs[0].name] = np.transpose(data[0], perm)
    graph.outputs = [node.outputs[0] for node in graph.nodes]
    verify(graph)
    return graph, feeds, expected


def _wrong(target: str, on: str, seed: int) -> list[str]:
    graph, feeds, expected = transpose_graph(seed)
    deployment = deploy(graph, DeploymentOptions(target=target))
    assert sum(node.op == "Transpose" for node in deployment.graph.nodes) == len(expected)
    outputs = run_generated(deployment, feeds, on).outputs
    return [f"{name}: {np.count_nonzero(outputs[name][0] != want)} of {want.size} differ"
            for name, want in expected.items() if not np.array_equal(outputs[name][0].reshape(want.shape), want)]


@pytest.mark.parametrize("seed", [1, 2])
def test_transpose_on_the_host(seed):
    wrong = _wrong("stm32h743", "host", seed)
    assert not wrong, wrong


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize(("target", "engine"), [("stm32h743", "qemu-m4"), ("stm32n6", "qemu-m55")])
def test_transpose_under_qemu(target, engine):
    wrong = _wrong(target, engine, 3)
    assert not wrong, wrong
