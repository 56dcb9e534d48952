"""The estimator charges a tiled / split deployment the bytes its code moves (estimate/traffic.py):
a tile's Slice reads its rows + halo, not the whole sliced tensor; a graph split's stores and
loads move their bytes between the two arenas (never "in place" because two tensors in
different arenas happen to share an offset). The reference is the plan's own transfer list
(plan/transfers.py: bytes per copy) and the Slices' output shapes, on the NPU and on the CPU."""
from __future__ import annotations

import dataclasses

import pytest

from mcudeploy.driver import deploy
from mcudeploy.estimate import estimate
from mcudeploy.estimate.kernel_map import feature_family, kernel_of
from mcudeploy.estimate.records import LayerCost
from mcudeploy.estimate.traffic import accesses_of, copy_in_place
from mcudeploy.options import DeploymentOptions, TilingRegion
from tiling_models import shared_int8

VWW = "mlperf_tiny/mobilenetv1_vww_int8.tflite"


@pytest.fixture(scope="module")
def vww():
    return shared_int8(VWW)


def _tiled_split(graph, cpu: bool):
    names = [n.name for n in graph.nodes]
    # the region's input is spilled: each tile's Slice loads its rows from hyperRAM; its output too
    options = DeploymentOptions(target="stm32n6", tiling_regions=(TilingRegion(names[2], names[6], 8),),
                                split_points=(names[1], names[6]))
    deployment = deploy(graph.copy(), options)
    if cpu:
        every = tuple(n.name for n in deployment.graph.nodes)
        deployment = deploy(graph.copy(), dataclasses.replace(options, force_cpu=every))
    return deployment


def _cpu_layers(deployment) -> dict[str, LayerCost]:
    """The CPU kernels' operand streams (traffic.accesses_of) of the Slices and copies as byte
    counts per region, whether or not the core has an instruction model of the kernel yet."""
    layers = {}
    for node in deployment.graph.nodes:
        kernel = kernel_of(node, "mcudeploy")
        if node.op not in ("Slice", "Identity") or kernel is None:
            continue
        context = {"in_place": copy_in_place(node, deployment.plan)}
        accesses = accesses_of(node, feature_family(kernel), {}, deployment.plan, "reference", 1, context)
        layer = LayerCost(node.name, node.op, "cpu", kernel, 0)
        for access in accesses:
            side = layer.bytes_written if access.write else layer.bytes_read
            side[access.region] = side.get(access.region, 0) + int(access.bytes)
        layers[node.name] = layer
    return layers


@pytest.mark.parametrize("cpu", [False, True], ids=["npu", "cpu"])
def test_tile_slices_and_split_copies_are_charged_the_bytes_they_move(vww, cpu):
    deployment = _tiled_split(vww, cpu)
    layers = _cpu_layers(deployment) if cpu else {layer.node: layer for layer in estimate(deployment).layers}
    plan, nodes = deployment.plan, {n.name: n for n in deployment.graph.nodes}
    slices = [n for n in deployment.graph.nodes if n.op == "Slice" and n.name not in plan.elided_nodes]
    assert slices, "the tiled region has row Slices that copy"
    for node in slices:
        layer, source, out = layers[node.name], node.inputs[0], node.outputs[0]
        # rows + halo of one tile: the Slice's output, read from where the sliced tensor lives
        assert sum(layer.bytes_read.values()) == out.nbytes < source.nbytes
        assert layer.bytes_read == {plan.tensors[source.name].region: out.nbytes}
    assert plan.transfers, "the split has stores and loads"
    for name, transfer in plan.transfers.items():
        node, layer = nodes[name], layers[name]
        if name in plan.elided_nodes:
            continue
        source_region = plan.tensors[transfer.source].region
        destination_region = plan.tensors[transfer.destination].region
        assert source_region != destination_region
        assert layer.bytes_read.get(source_region) == transfer.bytes, name
        assert layer.bytes_written.get(destination_region) == transfer.bytes, name
        assert not copy_in_place(node, plan)


def test_a_view_is_still_free(vww):
    deployment = deploy(vww.copy(), DeploymentOptions(target="stm32h743"))
    views = [n for n in deployment.graph.nodes if n.op == "Reshape" and copy_in_place(n, deployment.plan)]
    assert views, "VWW's final Reshape is a view of its input"
    layers = {layer.node: layer for layer in estimate(deployment).layers}
    assert all(not layers[n.name].bytes_read and not layers[n.name].bytes_written for n in views)
