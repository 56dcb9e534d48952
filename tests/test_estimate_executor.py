"""Issue 22's done-when on stm32n6: ``generate``, ``estimate`` and ``search`` agree on the device of
every node, under the default executor (mcudeploy's CPU code) and under ``--executor vendor-npu``.
The search's best configuration is deployed again, its estimate must be the latency the search
optimised, and the devices of that estimate must be those of the generated code's mapping."""
from __future__ import annotations

import json
import re

import pytest

from conftest import shared_model
from mcudeploy.codegen import generate_files
from mcudeploy.driver import deploy
from mcudeploy.estimate import estimate
from mcudeploy.mapping import CPU, NPU
from mcudeploy.options import DeploymentOptions
from mcudeploy.search import SearchRequest, run_search

RESNET8 = "mlperf_tiny/resnet8_int8.tflite"


def _generated_nodes(deployment) -> list[str]:
    """The node names of the generated network's layer table (network_layer_names)."""
    text = generate_files(deployment)["network.c"]
    table = text.split("network_layer_names[NETWORK_LAYER_COUNT] = {")[1].split("};")[0]
    return [json.loads(literal) for literal in re.findall(r'"(?:[^"\\]|\\.)*"', table)]


@pytest.fixture(scope="module", params=["mcudeploy", "vendor-npu"])
def searched(request):
    options = DeploymentOptions(target="stm32n6", executor=request.param)
    result = run_search(shared_model(RESNET8), SearchRequest(target="stm32n6", options=options, objective="latency",
                                                             budget=3, critical_limit=False, fixes=False,
                                                             locked=frozenset({"executor"})))
    assert result.found, [t.reasons for t in result.trials]
    best = deploy(shared_model(RESNET8), result.best_options())
    return request.param, result, best


def test_search_estimate_and_generate_name_one_executor(searched):
    executor, result, best = searched
    assert result.request.options.executor == executor == best.executor == best.mapping.executor
    figure = estimate(best)
    assert figure.executor == executor
    assert figure.latency_us == pytest.approx(result.best.metrics.latency_us, rel=1e-6)   # what the search optimised
    devices = {layer.node: layer.device for layer in figure.layers}
    assert devices == {p.node: p.device for p in best.mapping.placements if p.node in devices}
    on_cpu = sorted(p.node for p in best.mapping.on(CPU))
    if executor == "mcudeploy":
        assert set(devices.values()) == {CPU} and best.mapping.on(NPU) == []
        assert sorted(_generated_nodes(best)) == on_cpu        # generate writes every node as CPU code
    else:
        assert NPU in set(devices.values())                     # the vendor's NPU runs them, the hand-off says so
        assert {layer.node for layer in figure.layers if layer.device == NPU} == {p.node for p in best.mapping.on(NPU)}


def test_vendor_default_keeps_weights_in_flash_and_a_search_copy_says_its_cost(capsys):
    """N6 under the vendor's NPU: the defaults stream the weights from octoFlash (ST Edge AI's
    placement); a latency search that copies them says how many bytes of which RAM that takes."""
    from mcudeploy.cli.main import main

    model = shared_model(RESNET8)
    vendor = deploy(model, DeploymentOptions(target="stm32n6", executor="vendor-npu"))
    assert set(vendor.plan.weights.values()) == {"octoFlash"}
    assert main(["search", str(model), "--target", "stm32n6", "--executor", "vendor-npu", "--objective", "latency",
                 "--budget", "60"]) == 0
    out = capsys.readouterr().out
    copied = re.search(r"best copies weights from flash into RAM: (\d+) B \((\d+) B in (\w+)\); the defaults keep "
                       r"them in flash", out)
    assert copied, out
    hot = deploy(model, DeploymentOptions(target="stm32n6", executor="vendor-npu", weights="ram"))
    assert hot.plan.placement.reasons["weights"].endswith(f"(weights = ram): {copied[1]} bytes of {copied[3]}")
