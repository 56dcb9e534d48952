"""Every shared full-integer model (conftest.INT8_MODELS) deployed with the optimised kernel
variants its target's core picks, generated as C and run under QEMU -- Cortex-M4
(mps2-an386) with a DSP target (stm32h743: the _dsp variants) and Cortex-M55 (mps3-an547)
with a Helium target (stm32n6: the _mve variants) -- must equal the integer reference
(itself bit-exact with TFLite Micro) byte for byte, on one random input each; the
optimised variants must have been chosen for some of the nodes. Instruction counts against
the reference kernels and CMSIS-NN: benchmarks/kernels_bench.py."""
from __future__ import annotations

import pytest

from conftest import INT8_MODELS, shared_model
from mcudeploy.driver import deploy
from mcudeploy.options import DeploymentOptions
from mcudeploy.validate.generated_code import check_generated_code, random_integer_feeds
from test_codegen_qemu import needs_toolchain

ENGINES = {"qemu-m4": ("stm32h743", "dsp-"), "qemu-m55": ("stm32n6", "mve-")}


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("on", ENGINES)
@pytest.mark.parametrize("model", INT8_MODELS)
def test_shared_model_bit_exact_with_optimised_kernels(model, on):
    target, prefix = ENGINES[on]
    deployment = deploy(shared_model(model), DeploymentOptions(target=target, kernels="fastest"))   # every variant
    optimised = sum(count for name, count in deployment.kernels.counts().items() if name.startswith(prefix))
    assert optimised >= 1, deployment.kernels.counts()
    check = check_generated_code(deployment, random_integer_feeds(deployment.graph, 1, seed=len(model)), on)
    assert check.bit_exact, check.describe()
    assert len(check.instructions) == 1 and check.instructions[0] > 100
