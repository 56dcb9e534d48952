"""Generated C code on the host: built with gcc -std=c99 -Wall -Wextra -Werror under
-fsanitize=address,undefined, run on random inputs and compared byte for byte with the
integer reference executor (run_int), for a graph using every kernel family the generator
emits, a graph with hostile names, and the small shared int8 models (the large ones run
in test_codegen_qemu.py)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from codegen_graphs import nasty_graph, zoo_graph
from conftest import shared_model
from mcudeploy.codegen import ProjectOptions, generate_files
from mcudeploy.codegen.kernel_calls import EMITTERS
from mcudeploy.driver import deploy
from mcudeploy.importers import load_model
from mcudeploy.ir import DType, Graph, QuantParams, verify
from mcudeploy.reference.int_executor import run_int
from mcudeploy.validate.c_runner import run_host
from mcudeploy.validate.generated_code import check_generated_code

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("make") is None,
                                reason="host gcc / make not installed")


def random_feeds(graph, count: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in graph.inputs:
        if value.dtype.is_float:
            feeds[value.name] = (rng.standard_normal((count, *value.shape)) * 3).astype(np.float32)
        else:
            info = np.iinfo(value.dtype.numpy)
            feeds[value.name] = rng.integers(info.min, info.max, (count, *value.shape), endpoint=True
                                             ).astype(value.dtype.numpy)
    return feeds


def test_zoo_uses_every_kernel_family_and_is_bit_exact():
    graph = zoo_graph()
    used = {node.op for node in graph.nodes}
    assert used >= {"Conv", "ConvTranspose", "Gemm", "Add", "Sub", "Mul", "MaxPool", "AveragePool", "ReduceMean",
                    "Softmax", "Sigmoid", "Tanh", "HardSwish", "LeakyRelu", "QuantizeLinear", "DequantizeLinear",
                    "Reshape", "Transpose", "Slice", "Pad", "Concat", "Resize"}
    assert used <= set(EMITTERS)
    feeds = random_feeds(graph, 4)
    result = run_host(deploy(graph), feeds, sanitize=True)
    reference = run_int(graph, feeds, batch=True)
    for value in graph.outputs:
        assert result.outputs[value.name].dtype == reference[value.name].dtype
        assert np.array_equal(result.outputs[value.name], reference[value.name]), value.name
        assert len(np.unique(reference[value.name])) > 4      # not a saturated, constant output


def int16_activation_graph() -> Graph:
    """int16 Sigmoid -> Tanh (general and power-of-two input scales) next to an int8 ->
    int16 Softmax: the table-based int16 kernels and the mixed-type softmax."""
    def quant(scale: float, zero_point: int = 0) -> QuantParams:
        return QuantParams(np.array([scale], np.float32), np.array([zero_point]))
    graph = Graph("int16_activations")
    x = graph.add_input("x", DType.INT16, (1, 4, 4, 16), quant=quant(0.0003), layout="NHWC")
    logits = graph.add_input("logits", DType.INT8, (3, 10), quant=quant(0.2, -5))
    sigmoid = graph.add_node("Sigmoid", [x], name="sigmoid").outputs[0]
    sigmoid.quant = quant(1 / 32768)
    tanh = graph.add_node("Tanh", [sigmoid], name="tanh").outputs[0]    # input scale 2^-15
    tanh.quant = quant(1 / 32768)
    softmax = graph.add_node("Softmax", [logits], {"beta": 0.7, "output_dtype": "int16"},
                             name="softmax").outputs[0]
    softmax.quant = quant(1 / 65536, -32768)
    graph.outputs = [sigmoid, tanh, softmax]
    verify(graph)
    return graph


def test_int16_activations_and_int8_to_int16_softmax_bit_exact_on_host():
    graph = int16_activation_graph()
    feeds = random_feeds(graph, 4, seed=3)
    result = run_host(deploy(graph), feeds, sanitize=True)
    reference = run_int(graph, feeds, batch=True)
    for value in graph.outputs:
        assert result.outputs[value.name].dtype == np.int16
        assert np.array_equal(result.outputs[value.name], reference[value.name]), value.name
        assert len(np.unique(reference[value.name])) > 4      # not a saturated, constant output


def test_scratch_buffer_is_planned_inside_the_arena():
    graph = zoo_graph()
    deployment = deploy(graph)
    plan = deployment.plan
    transpose_conv = next(node.name for node in graph.nodes if node.op == "ConvTranspose")
    output = graph.node(transpose_conv).outputs[0]
    assert plan.scratch[transpose_conv].size == output.size * 4       # int32 accumulator per output
    network = generate_files(deployment, ProjectOptions())["network.c"]
    assert "static const mcu_context" in network and "malloc" not in network
    assert "mcu_transpose_conv2d_s8_scratch_size" in network   # re-checked by network_init


def test_hostile_names_build_and_stay_bit_exact():
    graph = nasty_graph()
    check = check_generated_code(deploy(graph), random_feeds(graph, 3), "host", sanitize=True)
    assert check.bit_exact, check.describe()


@pytest.mark.parametrize("model", ["tflite_micro/hello_world_int8.tflite", "mlperf_tiny/fc_autoencoder_int8.tflite",
                                   "tflite_micro/micro_speech_int8.tflite"])
def test_small_shared_models_bit_exact_on_host(model):
    graph = load_model(shared_model(model))
    check = check_generated_code(deploy(graph), random_feeds(graph, 3), "host", sanitize=True)
    assert check.bit_exact, check.describe()
    assert check.samples == 3 and check.instructions == []


def test_wrong_output_is_detected(monkeypatch):
    """The comparison can fail: corrupt one output byte of the C run."""
    import mcudeploy.validate.c_runner as c_runner
    graph = load_model(shared_model("tflite_micro/hello_world_int8.tflite"))
    real_read = c_runner.read_outputs

    def corrupted(graph, path, count):
        outputs = real_read(graph, path, count)
        name = graph.outputs[0].name
        outputs[name][1] = outputs[name][1] ^ 1
        return outputs
    monkeypatch.setattr(c_runner, "read_outputs", corrupted)
    check = check_generated_code(deploy(graph), random_feeds(graph, 3), "host")
    assert not check.bit_exact and "differs in 1 of 3 samples" in check.describe()
