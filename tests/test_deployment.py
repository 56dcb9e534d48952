"""One pipeline, one Deployment record: ``plan``, ``generate``, ``validate --on`` and ``run
--engine c-*`` all consume :func:`mcudeploy.driver.deploy`, so they agree on the graph, the
regions, the scratch, the arena and the fit. Each test here is one inconsistency that the
commands used to have (they wired the stages themselves), now impossible."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from codegen_graphs import q, weights, zoo_graph
from conftest import INT8_MODELS, shared_model
from mcudeploy.cli.main import main as cli_main
from mcudeploy.codegen import ProjectOptions, generate_files
from mcudeploy.deployment import check_deployment
from mcudeploy.driver import deploy
from mcudeploy.errors import DoesNotFitError
from mcudeploy.ir import DType, Graph, verify
from mcudeploy.options import DeploymentOptions

RESNET8 = "mlperf_tiny/resnet8_int8.tflite"
TARGETS = ("stm32h743", "stm32n6", "npu-mcu")

TINY_TARGET = """
name = "tiny-8k"
[core]
name = "Cortex-M4"
clock_mhz = 80
dsp = true
[[regions]]
name = "SRAM"
base = 0x2000_0000
size = "8K"
bandwidth_mb_per_s = 320
[[regions]]
name = "FLASH"
base = 0x0800_0000
size = "1M"
kind = "flash"
access = "r"
bandwidth_mb_per_s = 160
"""


def arena_macros(network_c: str) -> dict[str, int]:
    """Region -> arena bytes, as the generated code declares them."""
    return {region: int(size) for region, size in
            re.findall(r"#define NETWORK_ARENA_(\w+)_BYTES (\d+)", network_c)}


@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("model", INT8_MODELS)
def test_plan_generate_and_validate_agree(model, target, tmp_path, capsys, monkeypatch):
    """plan --json, the generated code and validate --on's deployment: same arena region,
    arena bytes, scratch, weights' regions and fit verdict."""
    path = shared_model(model)
    assert cli_main(["plan", str(path), "--target", target, "--json", str(tmp_path / "p.json")]) in (0, 8)
    planned = json.loads((tmp_path / "p.json").read_text())
    deployment = deploy(path, DeploymentOptions(target=target))
    assert check_deployment(deployment) == []
    assert planned["arena_bytes"] == deployment.plan.arena_bytes
    assert planned["arena_region"] == deployment.plan.placement.arena_region
    assert planned["scratch"] == {k: v.__dict__ for k, v in deployment.plan.scratch.items()} or \
        {k: v["size"] for k, v in planned["scratch"].items()} == {k: v.size for k, v in deployment.plan.scratch.items()}
    assert planned["weights"] == deployment.plan.weights
    ledger_weights = {line["region"] for line in planned["ledger"] if line["item"] == "weights" and line["bytes"]}
    assert ledger_weights == set(deployment.plan.weights.values())
    assert planned["fits"] == deployment.fits
    if not deployment.fits:
        return
    network = generate_files(deployment, ProjectOptions())["network.c"]
    header = generate_files(deployment, ProjectOptions())["network.h"]
    declared = arena_macros(header + network)
    region = deployment.plan.placement.arena_region
    assert list(declared) == [re.sub(r"\W", "_", region).upper()]
    assert next(iter(declared.values())) >= deployment.plan.arena_bytes
    seen = {}
    import mcudeploy.cli.cmd_validate as cmd_validate
    monkeypatch.setattr(cmd_validate, "verify",
                        lambda d, feeds, on, profile=False: seen.setdefault("deployment", d) and _Passed())
    assert cli_main(["validate", str(path), "--on", "host", "--target", target, "--samples", "1"]) == 0
    used = seen["deployment"]
    assert used.plan.arena_bytes == deployment.plan.arena_bytes
    assert used.plan.placement.arena_region == region
    assert used.plan.scratch.keys() == deployment.plan.scratch.keys()


class _Passed:
    bit_exact = True
    layer_instructions: list = []

    def describe(self) -> str:
        return "bit-exact (stub)"


def test_generate_refuses_a_deployment_that_does_not_fit(tmp_path, capsys):
    target = tmp_path / "tiny.toml"
    target.write_text(TINY_TARGET)
    model = str(shared_model(RESNET8))
    assert cli_main(["plan", model, "--target", str(target)]) == 8
    plan_error = capsys.readouterr().err
    assert cli_main(["generate", model, "--target", str(target), "-o", str(tmp_path / "out")]) == 8
    error = capsys.readouterr().err
    assert "does not fit" in error and "SRAM by" in error and "no C code generated" in error
    assert re.search(r"SRAM by (\d+) bytes", error).group(1) == re.search(r"SRAM by (\d+) bytes", plan_error).group(1)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def big_activation_graph(size: int = 512, channels: int = 32) -> Graph:
    """int8 conv over a size x size x channels image: more than any on-chip bank of an N6."""
    graph = Graph("big")
    x = graph.add_input("x", DType.INT8, (1, size, size, channels))
    x.quant = q(0.05, -3)
    w = graph.add_constant("w", weights((channels, 3, 3, channels)), quant=q(np.full(channels, 0.01), 0, 0))
    y = graph.add_node("Conv", [x, w], {"layout": "NHWC", "pads": (1, 1, 1, 1)}, name="conv").outputs[0]
    y.quant = q(0.05, 2)
    graph.outputs = [y]
    verify(graph)
    return graph


def test_arena_larger_than_on_chip_goes_to_psram_and_code_follows():
    deployment = deploy(big_activation_graph(), DeploymentOptions(target="stm32n6"))
    region = deployment.plan.placement.arena_region
    assert region == "hyperRAM" and deployment.fits
    assert "OFF CHIP" in deployment.ledger.verdict() and "hyperRAM" in deployment.ledger.verdict()
    network = generate_files(deployment, ProjectOptions())["network.c"]
    assert ".bss.mcu_arena.hyperRAM" in network and "npuRAM" not in network
    on_chip = deploy(big_activation_graph(), DeploymentOptions(target="stm32n6", external_activations=False))
    assert not on_chip.fits
    with pytest.raises(DoesNotFitError, match="no C code generated"):
        generate_files(on_chip, ProjectOptions())


def test_overflow_is_reported_against_the_region_considered():
    graph = big_activation_graph(size=1024, channels=32)          # 2 x 32 MiB: more than the hyperRAM
    deployment = deploy(graph, DeploymentOptions(target="stm32n6"))
    assert not deployment.fits
    assert deployment.plan.placement.arena_region == "hyperRAM"
    assert "hyperRAM by" in deployment.ledger.verdict()


def test_plan_and_generate_both_plan_the_scratch():
    graph = zoo_graph()
    deployment = deploy(graph)
    transpose_conv = next(n.name for n in deployment.graph.nodes if n.op == "ConvTranspose")
    assert transpose_conv in deployment.plan.scratch
    document = deployment.to_json()
    assert transpose_conv in document["scratch"]
    network = generate_files(deployment, ProjectOptions())["network.c"]
    assert f"{deployment.plan.scratch[transpose_conv].size}}};" in network


def test_plan_json_weights_and_ledger_agree_on_npu_mcu(tmp_path):
    path = shared_model(RESNET8)
    assert cli_main(["plan", str(path), "--target", "npu-mcu", "--json", str(tmp_path / "p.json")]) == 0
    document = json.loads((tmp_path / "p.json").read_text())
    by_region: dict[str, int] = {}
    sizes = {v.name: v.nbytes for v in deploy(path).graph.constants()}
    for name, region in document["weights"].items():
        by_region[region] = by_region.get(region, 0) + sizes[name]
    ledger = {line["region"]: line for line in document["ledger"] if line["item"] == "weights"}
    assert set(by_region) == set(ledger)
    for region, graph_bytes in by_region.items():   # as compiled: the graph's bytes plus layouts and arrays
        assert f"({graph_bytes} B in the graph)" in ledger[region]["note"] and ledger[region]["bytes"] > graph_bytes
    assert "lower_bound_bytes" not in document and document["no_reuse_bound_bytes"] >= 0


def test_validate_on_host_works_for_a_full_integer_tflite_model(capsys):
    path = shared_model("tflite_micro/hello_world_int8.tflite")
    assert cli_main(["validate", str(path), "--on", "host", "--samples", "3"]) == 0
    assert "bit-exact" in capsys.readouterr().out


def test_validate_needs_quantized_or_on(capsys):
    path = shared_model("tflite_micro/hello_world_float.tflite")
    assert cli_main(["validate", str(path)]) == 2
    assert "--quantized" in capsys.readouterr().err


def test_validate_on_uses_the_deployment_with_pads_folded():
    """The code validate --on builds is generate's: a Pad before a Conv is folded in both."""
    deployment = deploy(shared_model("mlperf_tiny/mobilenetv1_vww_int8.tflite"), DeploymentOptions(target="stm32h743"))
    network = generate_files(deployment, ProjectOptions())["network.c"]
    assert "mcu_pad_" not in network


@pytest.mark.parametrize("command", ["analyze", "plan", "lint"])
def test_json_dash_and_bare_flag_write_stdout(command, capsys):
    path = str(shared_model("tflite_micro/hello_world_int8.tflite"))
    extra = ["--target", "stm32h743"] if command != "analyze" else []
    for flag in (["--json", "-"], ["--json"]) if command != "analyze" else (["--json", "-"],):
        assert cli_main([command, path, *extra, *flag]) in (0, 1)
        json.loads(capsys.readouterr().out)


def test_json_file_is_written_not_printed(tmp_path, capsys):
    path = str(shared_model("tflite_micro/hello_world_int8.tflite"))
    assert cli_main(["lint", path, "--target", "stm32h743", "--json", str(tmp_path / "l.json")]) in (0, 1)
    json.loads((tmp_path / "l.json").read_text())
    assert not (tmp_path / "-").exists()


def test_export_tflm_without_the_litert_schema_is_one_clear_error(monkeypatch, tmp_path, capsys):
    import builtins
    real_import = builtins.__import__

    def no_litert(name, *args, **kwargs):
        if name.startswith("ai_edge_litert"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_litert)
    path = str(shared_model("mlperf_tiny/dscnn_kws_int8.tflite"))
    assert cli_main(["plan", path, "--export-tflm", str(tmp_path / "o.tflite")]) == 2
    error = capsys.readouterr().err
    assert "pip install ai-edge-litert" in error and "Traceback" not in error
    assert not (tmp_path / "o.tflite").exists()


def test_fewer_fast_variants_run_when_they_break_the_fit():
    path = shared_model(RESNET8)
    fast = deploy(path, DeploymentOptions(target="stm32h743"))
    reference = deploy(path, DeploymentOptions(target="stm32h743", kernels="reference"))
    assert set(fast.kernels.counts()) != {"reference"} and fast.plan.arena_bytes > reference.plan.arena_bytes
    limit = reference.plan.arena_bytes + 64          # holds the reference arena, not the fast one
    tight = dict(target="stm32h743", activation_region="DTCM", sram_limit=limit)
    fitted = deploy(path, DeploymentOptions(**tight))
    # the default keeps the fast variants that cost no arena (as kernels = arena) and says so
    assert fitted.fits and fitted.plan.arena_bytes <= reference.plan.arena_bytes
    assert set(fitted.kernels.counts()) != {"reference"} and "reference" in fitted.kernels.counts()
    assert any("run the reference kernel instead" in w for w in fitted.warnings)
    assert fitted.kernels.counts() == deploy(path, DeploymentOptions(**tight, kernels="arena")).kernels.counts()
    assert not deploy(path, DeploymentOptions(**tight, kernels="fastest")).fits      # fastest: fit or not
