"""The instruction model against the emulator: a shared model's generated code under QEMU
(-icount shift=0, per-layer profile) must match the estimate per layer and per model within 5 %
(or two SysTick ticks for layers of a few dozen instructions). The fit never saw this model:
it was made on synthetic layers (tools/fit_instruction_model.py). Both the portable kernels
and the optimised variants ``kernels = auto`` picks (DSP on the M4, Helium and DSP on the
M55). Softmax is the exception per layer: it skips the exponential of inputs more than
diff_min below the row's maximum, so its count depends on the data; the estimate is the
expectation for evenly spread inputs."""
from __future__ import annotations

import shutil

import pytest

from conftest import shared_model
from mcudeploy.driver import deploy
from mcudeploy.estimate import estimate
from mcudeploy.options import DeploymentOptions
from mcudeploy.validate import qemu
from mcudeploy.validate.generated_code import random_integer_feeds, run_generated

HAVE_TOOLCHAIN = all(shutil.which(tool) for tool in qemu.TOOLS)


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_TOOLCHAIN, reason="arm-none-eabi-gcc / qemu-system-arm missing: tools/install_toolchain.sh")
@pytest.mark.parametrize("board, target, per_tick", [("qemu-m4", "stm32l4r5", 40), ("qemu-m55", "stm32n6", 31.25)])
@pytest.mark.parametrize("kernels", ["reference", "auto"])
def test_estimated_instructions_match_qemu(board, target, per_tick, kernels):
    model = shared_model("mlperf_tiny/dscnn_kws_int8.tflite")
    every_node = tuple(node.name for node in deploy(model, DeploymentOptions()).graph.nodes)
    deployment = deploy(model, DeploymentOptions(target=target, kernels=kernels, force_cpu=every_node))
    assert (set(deployment.kernels.counts()) == {"reference"}) == (kernels == "reference")
    result = estimate(deployment)
    measured = run_generated(deployment, random_integer_feeds(deployment.graph, 1, seed=11), board, profile=True)
    assert result.cpu_instructions == pytest.approx(measured.instructions[0], rel=0.05)
    layers = [layer for layer in result.layers if layer.kernel != "elided"]
    for layer, count in zip(layers, measured.layer_instructions[0], strict=True):
        if layer.op == "Softmax":
            assert abs(layer.instructions - count) <= 0.5 * count   # data-dependent (module docstring)
            continue
        assert abs(layer.instructions - count) <= max(0.05 * count, 2 * per_tick), (layer.node, layer.kernel, count)
