"""mcu_softmax_s8 / _s8_s16 (runtime/src/softmax.c: rows of up to 32 keep their
exponentials for the output pass, longer rows recompute them) bit for bit against
``run_int``: depths around the 32 limit, several rows, int8 and int16 outputs, large and
small input scales (the diff_min cut), on the host and under QEMU (Cortex-M4 / M55)."""
from __future__ import annotations

import numpy as np
import pytest

from kernel_cases import q
from mcudeploy.driver import deploy
from mcudeploy.ir import DType, Graph, verify
from mcudeploy.options import DeploymentOptions
from mcudeploy.reference.int_executor import run_int
from mcudeploy.validate.generated_code import run_generated
from test_codegen_qemu import needs_toolchain

SHAPES = [(1, 2), (1, 10), (3, 12), (1, 31), (1, 32), (1, 33), (2, 100), (1, 2, 3, 7)]


def softmax_graph(seed: int) -> tuple[Graph, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    graph = Graph("softmaxes")
    for index, shape in enumerate(SHAPES):
        x = graph.add_input(f"x{index}", DType.INT8, shape,
                            quant=q([0.02, 0.1, 0.5][index % 3], int(rng.integers(-128, 128))))
        wide = index % 4 == 3   # TFLite's int8 -> int16 softmax
        node = graph.add_node("Softmax", [x], {"axis": -1, "output_dtype": "int16" if wide else "same"},
                              name=f"softmax{index}")
        node.outputs[0].quant = q(1 / 65536, -32768) if wide else q(1 / 256, -128)
    graph.outputs = [node.outputs[0] for node in graph.nodes]
    verify(graph)
    feeds = {value.name: rng.integers(-128, 128, (2, *value.shape)).astype(np.int8) for value in graph.inputs}
    return graph, feeds


def _wrong(target: str, on: str, seed: int) -> list[str]:
    graph, feeds = softmax_graph(seed)
    outputs = run_generated(deploy(graph, DeploymentOptions(target=target)), feeds, on).outputs
    wrong = []
    for sample in range(2):
        expected = run_int(graph, {name: array[sample] for name, array in feeds.items()})
        wrong += [f"{value.name} (sample {sample})" for value in graph.outputs
                  if not np.array_equal(np.asarray(expected[value.name]), outputs[value.name][sample])]
    return wrong


@pytest.mark.parametrize("seed", [1, 2])
def test_softmax_on_the_host(seed):
    wrong = _wrong("stm32h743", "host", seed)
    assert not wrong, wrong


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize(("target", "engine"), [("stm32h743", "qemu-m4"), ("stm32n6", "qemu-m55")])
def test_softmax_under_qemu(target, engine):
    wrong = _wrong(target, engine, 3)
    assert not wrong, wrong
