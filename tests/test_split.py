"""Graph split (passes/split_external.py, plan/split.py, plan/transfers.py): the tensors that
cross a cut live in an external arena, reached by copies the plan lists; the integer
reference is unchanged byte for byte; the ledger and the generated code show both arenas;
bad cut points are UsageErrors naming the node."""
from __future__ import annotations

import pytest

from mcudeploy.codegen import generate_files
from mcudeploy.deployment import check_deployment
from mcudeploy.driver import deploy
from mcudeploy.errors import UsageError
from mcudeploy.ir import verify
from mcudeploy.options import DeploymentOptions, TilingRegion
from tiling_models import assert_same_outputs, random_feeds, shared_int8, unet

VWW = "mlperf_tiny/mobilenetv1_vww_int8.tflite"


@pytest.fixture(scope="module")
def vww():
    return shared_int8(VWW)


def test_cut_points_spill_the_crossing_tensors_and_copy_them(vww):
    names = [n.name for n in vww.nodes]
    region = TilingRegion(names[0], names[3], 8)
    options = DeploymentOptions(target="stm32n6", tiling_regions=(region,), split_points=(names[3], names[7]))
    deployment = deploy(vww, options)
    assert check_deployment(deployment) == []
    split, plan = deployment.memory_transform.split, deployment.plan
    assert split.points == (f"{names[3]}@tiles", names[7])     # a tiled region's end cuts after its Concat
    crossing = {vww.node(names[3]).outputs[0].name, vww.node(names[7]).outputs[0].name}
    assert set(split.tensors) == crossing
    # the two crossing tensors are never alive in external RAM together, so the external arena
    # reuses the space: it holds the larger of them (9,216 B), not their sum
    assert crossing <= set(plan.external) and plan.external_bytes >= 9216
    assert all(plan.tensors[name].region == "hyperRAM" for name in plan.external)
    # each stripe is stored as soon as it is computed; each reader loads its rows
    stores = [t for t in plan.transfers.values() if t.direction == "store"]
    loads = [t for t in plan.transfers.values() if t.direction == "load"]
    assert len(stores) == 8 + 1 and len(loads) == 2
    assert any(line.item.startswith("activations (graph split") and line.region == "hyperRAM"
               for line in deployment.ledger.lines)
    parts = split.parts(deployment.graph, plan)
    assert len(parts) == 3 and all(p.on_chip_peak <= plan.arena_bytes for p in parts)
    verify(deployment.graph)
    assert_same_outputs(vww, deployment.graph, random_feeds(vww, 2))


def test_generated_code_copies_through_the_weak_hook(vww):
    names = [n.name for n in vww.nodes]
    deployment = deploy(vww, DeploymentOptions(target="stm32n6", split_points=(names[5],)))
    files = generate_files(deployment)
    network_c, network_h = files["network.c"], files["network.h"]
    assert "__attribute__((weak))" in network_c and "void network_copy(void *destination" in network_h
    assert network_c.count("network_copy(network_arena_hyperRAM") == 1                  # the store
    assert network_c.count("network_copy(network_arena_") == len(deployment.plan.transfers)
    assert '.bss.mcu_external.hyperRAM' in network_c
    plain = generate_files(deploy(vww, DeploymentOptions(target="stm32n6")))["network.c"]
    assert "network_copy" not in plain                                  # no split: the code is unchanged


@pytest.mark.slow
def test_auto_split_spills_the_unet_skips_until_the_limit():
    graph = unet(64)
    options = DeploymentOptions(target="stm32n6", split_auto=True, split_limit=300_000,
                                tiling_regions=(TilingRegion("resize_59", "conv_71", 8),))
    deployment = deploy(graph, options)
    split = deployment.memory_transform.split
    assert deployment.plan.arena_bytes <= 300_000 < split.arena_before
    assert "relu_8_nhwc" in split.tensors                  # the full-resolution skip tensor
    assert check_deployment(deployment) == []
    assert_same_outputs(graph, deployment.graph, random_feeds(graph, 1))


@pytest.mark.parametrize("options,message", [
    (dict(split_points=("Relu_7",)), r"no node 'Relu_7'.*fused"),
    (dict(split_points=("LAST",)), r"is the last node; nothing crosses"),
    (dict(split_points=("INNER",), tiling_regions="REGION"), r"inside the tiled region"),
    (dict(split_points=("FIRST",), target="stm32h743"), r"stm32h743' has no external RAM"),
    (dict(split_points=("FIRST",), split_auto=True), r"points or auto"),
    (dict(split_points=("FIRST",), external_region="NOPE"), r"NOPE"),
])
def test_bad_split_points(vww, options, message):
    names = [n.name for n in vww.nodes]
    aliases = {"LAST": names[-1], "INNER": names[2], "FIRST": names[0]}
    options = {"target": "stm32n6", **options}
    options["split_points"] = tuple(aliases.get(p, p) for p in options["split_points"])
    if options.get("tiling_regions") == "REGION":
        options["tiling_regions"] = (TilingRegion(names[0], names[5], 2),)
    with pytest.raises(UsageError, match=message):
        deploy(vww, DeploymentOptions(**options))
