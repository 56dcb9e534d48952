"""One executor per deployment (issue 22): on an NPU target mcudeploy writes CPU code only, so
``plan``, ``estimate``, ``search`` and ``generate`` agree that every node runs on the CPU
(``executor = "mcudeploy"``, the default); ``--executor vendor-npu`` estimates the NPU mapping
and ``generate`` writes the hand-off for ST Edge AI (partition models, ``.mpool``, profile,
command line). Checked on ResNet-8 (MLPerf Tiny) on stm32n6, the exported partition against
TFLite Micro, the pool file against mcudeploy's own .mpool reader and ST's documented keys."""
from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tflite

from conftest import shared_model
from mcudeploy.codegen import generate_files, write_project
from mcudeploy.codegen.vendor_npu import handoff_files
from mcudeploy.deployment import check_deployment
from mcudeploy.driver import deploy, partition_deployment
from mcudeploy.errors import UsageError
from mcudeploy.estimate import estimate
from mcudeploy.lint import lint_deployment
from mcudeploy.mapping import CPU, NPU, partition_graph
from mcudeploy.options import DeploymentOptions, parse_options
from mcudeploy.reference.int_executor import run_int
from mcudeploy.targets import load_memory_pools
from mcudeploy.validate import qemu
from mcudeploy.validate.generated_code import random_integer_feeds, run_generated

RESNET8 = "mlperf_tiny/resnet8_int8.tflite"
POOL_KEYS = {"fname", "name", "fformat", "prop", "offset", "size", "mode"}
PROP_KEYS = {"rights", "throughput", "latency", "pipelined", "cacheable", "constantsPreferred"}


@pytest.fixture(scope="module")
def model():
    return shared_model(RESNET8)


@pytest.fixture(scope="module")
def cpu_code(model):
    return deploy(model, DeploymentOptions(target="stm32n6"))


@pytest.fixture(scope="module")
def vendor(model):
    return deploy(model, DeploymentOptions(target="stm32n6", executor="vendor-npu"))


@pytest.fixture(scope="module")
def handoff(vendor, tmp_path_factory):
    projects = {p.index: generate_files(partition_deployment(vendor, p)) for p in vendor.partitions()
                if p.device == CPU}
    folder = tmp_path_factory.mktemp("handoff")
    write_project(handoff_files(vendor, projects), folder)
    return folder


def _layer_names(network_c: str) -> list[str]:
    """The node names of the generated network's layer table (network_layer_names)."""
    table = network_c.split("network_layer_names[NETWORK_LAYER_COUNT] = {")[1].split("};")[0]
    return [json.loads(literal) for literal in re.findall(r'"(?:[^"\\]|\\.)*"', table)]


def test_default_executor_is_the_cpu_code_and_every_command_agrees(cpu_code, vendor):
    assert cpu_code.executor == "mcudeploy" and check_deployment(cpu_code) == []
    assert cpu_code.mapping.on(NPU) == [] and cpu_code.mapping.executor == "mcudeploy"
    would = {p.node for p in cpu_code.npu_mapping.on(NPU)}          # the NPU's view, kept as information
    assert would == {p.node for p in vendor.mapping.on(NPU)} and cpu_code.npu_mapping.macc_rate > 0.999
    for placement in cpu_code.mapping.placements:
        codes = {r.code for r in placement.reasons}
        assert ("executor-cpu" in codes) == (placement.node in would)
    result = estimate(cpu_code)
    assert result.executor == "mcudeploy" and {layer.device for layer in result.layers} == {CPU}
    assert result.to_json()["executor"] == "mcudeploy" and cpu_code.summary()["executor"] == "mcudeploy"
    npu = estimate(vendor)
    assert npu.executor == "vendor-npu" and check_deployment(vendor) == []
    assert {layer.node for layer in npu.layers if layer.device == NPU} == would
    # the NPU figure is not the CPU code's: the Neural-ART runs ResNet-8 several times faster than
    # the M55 (over 10x before the packed Helium 3x3 conv, 8.3x after; a factor, not a pinned figure)
    assert npu.latency_us * 3 < result.latency_us
    assert "executor mcudeploy" in cpu_code.executor_line() and "vendor-npu 15 of them" in cpu_code.executor_line()


def test_generated_devices_equal_the_deployments_mapping(cpu_code, vendor, handoff):
    files = generate_files(cpu_code)
    assert sorted(_layer_names(files["network.c"])) == sorted(p.node for p in cpu_code.mapping.on(CPU))
    devices: dict[str, str] = {}
    manifest = json.loads((handoff / "handoff.json").read_text())
    for entry in manifest["partitions"]:
        if entry["device"] == NPU:       # the operators of the exported model write the partition's tensors
            model = tflite.Model.GetRootAsModel((handoff / entry["file"]).read_bytes(), 0)
            graph = model.Subgraphs(0)
            written = {graph.Tensors(graph.Operators(i).Outputs(0)).Name().decode()
                       for i in range(graph.OperatorsLength())}
            nodes = [n for n in entry["nodes"] if vendor.graph.node(n).outputs[0].name in written]
            assert graph.OperatorsLength() == len(entry["nodes"]) == len(nodes)
        else:
            nodes = _layer_names((handoff / entry["file"] / "network.c").read_text())
        devices.update({node: entry["device"] for node in nodes})
    assert devices == {p.node: p.device for p in vendor.mapping.placements}


def test_npu_partition_model_runs_in_tflite_micro_like_the_integer_reference(vendor, handoff):
    from mcudeploy.validate.references import tflm_interpreter, tflm_run

    partition = next(p for p in vendor.partitions() if p.device == NPU)
    assert partition.inputs == ("input_1_int8",) and len(partition.outputs) == 1
    feeds = random_integer_feeds(vendor.graph, 2, seed=3)
    values = run_int(vendor.graph, feeds, capture=True, batch=True)
    interpreter = tflm_interpreter(handoff / f"partition_{partition.index}_npu.tflite")
    measured = tflm_run(interpreter, feeds["input_1_int8"])
    np.testing.assert_array_equal(measured.reshape(2, -1), np.asarray(values[partition.outputs[0]]).reshape(2, -1))
    sub = partition_graph(vendor.graph, partition)
    assert [v.name for v in sub.inputs] == list(partition.inputs) and [v.name for v in sub.outputs] == list(partition.outputs)


def test_memory_pool_profile_and_command_follow_the_documented_formats(vendor, handoff):
    pool_file = handoff / "resnet8_int8.mpool"
    document = json.loads(pool_file.read_text())
    pools = document["memory"]["mempools"]
    assert [p["name"] for p in pools] == [r.name for r in vendor.target.regions]
    for pool in pools:
        assert POOL_KEYS <= set(pool) and PROP_KEYS <= set(pool["prop"])
        assert set(pool["offset"]) == set(pool["size"]) == {"value", "magnitude"}
        assert pool["prop"]["rights"] in ("ACC_READ", "ACC_WRITE")
    placement = vendor.plan.placement
    enabled = {r.name: (r.base, r.size) for r in load_memory_pools(pool_file)}     # size 0: switched off
    assert set(enabled) == {placement.arena_region, *placement.weights.values()} == {"npuRAM3", "octoFlash"}
    assert enabled == {r.name: (r.base, r.size) for r in vendor.target.regions if r.name in enabled}
    for partition in (p for p in vendor.partitions() if p.device == CPU):   # the pools are the vendor's alone
        assert partition_deployment(vendor, partition).plan.placement.arena_region not in enabled
    constants = {p["name"] for p in pools if p["prop"]["constantsPreferred"]}
    assert constants == {"octoFlash"}                                  # the vendor's weights placement
    profiles = json.loads((handoff / "neural_art.json").read_text())["Profiles"]
    assert (handoff / profiles["mcudeploy"]["memory_pool"]).resolve() == pool_file.resolve()
    commands = [shlex.split(line) for line in (handoff / "stedgeai.sh").read_text().splitlines()
                if line.startswith("stedgeai ")]
    assert len(commands) == sum(1 for p in vendor.partitions() if p.device == NPU)
    for words in commands:
        assert words[:2] == ["stedgeai", "generate"] and words[words.index("--target") + 1] == "stm32n6"
        assert (handoff / words[words.index("--model") + 1]).is_file()
        profile, profile_file = words[words.index("--st-neural-art") + 1].split("@")
        assert profile in json.loads((handoff / profile_file).read_text())["Profiles"]
    subprocess.run(["sh", "-n", str(handoff / "stedgeai.sh")], check=True)   # the script parses


def test_n6_weights_stay_in_flash_under_the_vendor_and_a_copy_says_its_cost(model, cpu_code, vendor):
    assert set(vendor.plan.weights.values()) == {"octoFlash"}
    assert "--weights-to-ram would copy the hot ones into on-chip RAM (78064 bytes of npuRAM3)" \
        in vendor.plan.placement.reasons["weights"]
    copied = deploy(model, DeploymentOptions(target="stm32n6", executor="vendor-npu", weights="ram"))
    assert copied.plan.placement.reasons["weights"].endswith("(weights = ram): 78064 bytes of npuRAM3")
    # mcudeploy's CPU code keeps its own rule: its kernels re-read each filter per output pixel
    assert cpu_code.plan.weights == copied.plan.weights


def test_lint_says_what_the_npu_would_do_as_information(cpu_code, vendor, model):
    from mcudeploy.driver import load_graph

    source = load_graph(model)
    cpu = lint_deployment(cpu_code, source)
    executor = [f for f in cpu.findings if f.rule == "executor"]
    assert len(executor) == 1 and "with --executor vendor-npu 15 of 16 nodes (99.99 %" in executor[0].message
    assert all(f.severity == "info" for f in cpu.findings if f.rule == "npu-fallback")
    npu = lint_deployment(vendor, source)
    assert not [f for f in npu.findings if f.rule == "executor"]


# ---------------------------------------------------------------- bad input

def test_vendor_npu_on_a_target_without_npu_is_one_line(model):
    with pytest.raises(UsageError, match="--executor vendor-npu: target 'stm32h743' has no NPU; use --executor mcudeploy"):
        deploy(model, DeploymentOptions(target="stm32h743", executor="vendor-npu"))


def test_unknown_executor_in_a_config_file_names_the_choices():
    with pytest.raises(UsageError, match=r"cfg.toml: \[mapping\] executor: 'npu' is not one of mcudeploy, vendor-npu"):
        parse_options({"mapping": {"executor": "npu"}}, "cfg.toml")


def test_mcudeploy_code_is_not_generated_for_a_vendor_deployment(vendor):
    with pytest.raises(UsageError, match="executor vendor-npu: the NPU nodes are the vendor's code"):
        generate_files(vendor)


@pytest.mark.parametrize("arguments, message", [
    (["--target", "stm32n6", "--executor", "npu"], "--executor 'npu': unknown executor; use mcudeploy"),
    (["--target", "stm32l4r5", "--executor", "vendor-npu"], "target 'stm32l4r5' has no NPU"),
])
def test_cli_bad_executor_is_one_line_exit_2(model, arguments, message):
    done = subprocess.run([sys.executable, "-m", "mcudeploy", "estimate", str(model), *arguments],
                          capture_output=True, text=True, timeout=120)
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert done.returncode == 2 and len(errors) == 1 and message in errors[0] and "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.skipif(not all(shutil.which(tool) for tool in qemu.TOOLS), reason="arm-none-eabi-gcc / qemu missing")
def test_default_n6_estimate_counts_the_instructions_of_the_generated_code(cpu_code):
    """Issue 22's figure: the default stm32n6 deployment's estimate (executor mcudeploy, no option)
    is the code generate writes: its instruction count within 5 % of QEMU M55's for that code."""
    result = estimate(cpu_code)
    measured = run_generated(cpu_code, random_integer_feeds(cpu_code.graph, 1, seed=5), "qemu-m55", profile=True)
    assert result.cpu_instructions == pytest.approx(measured.instructions[0], rel=0.05)
    assert len([layer for layer in result.layers if layer.kernel != "elided"]) == len(measured.layer_instructions[0])
