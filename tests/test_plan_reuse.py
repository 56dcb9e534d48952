"""The concat-in-place decisions of plan/reuse.py against their definition.

With ``concat_in_place=None`` a concat writes its inputs in place only where that does not
raise the live-set bound of the alias groups. ``find_reuse`` keeps that bound up to date
incrementally (``_LiveSum``); the reference here recomputes it from every tensor before and
after each concat, as the definition reads. Both must alias the same inputs and refuse the
same concats with the same numbers, on graphs where the rule decides both ways: the U-Net's
skip concats untiled, and tiled at its levels (hundreds of tile concats, a split's external
arena beside the on-chip one).
"""
from __future__ import annotations

import pytest

from mcudeploy.kernels.choose import choose_kernels
from mcudeploy.plan.bounds import live_set_bound
from mcudeploy.plan.liveness import tensor_lives
from mcudeploy.plan.reuse import (
    Alias,
    concat_refusal,
    find_reuse,
    group_buffers,
    groups_of,
    is_channel_concat,
    slice_places,
)
from mcudeploy.targets import load_target
from tiling_models import unet

ALIGNMENT = 16


def _reference(graph, nodes, lives, external, strided):
    """Views and row slices as find_reuse makes them, then each concat by the definition."""
    reuse = find_reuse(graph, nodes, lives, ALIGNMENT, concat_in_place=False, overlap=False, external=external,
                       strided_output=strided)
    arena = {life.name: life for life in lives}

    def bound():
        return live_set_bound(group_buffers(groups_of(lives, reuse), ALIGNMENT)).bytes
    for node in nodes:
        if node.op != "Concat":
            continue
        refusal = concat_refusal(node, arena, reuse, ALIGNMENT, strided)
        if refusal:
            reuse.refusals.append((node.name, "concat in place: " + refusal))
            continue
        decides = node.outputs[0].name not in reuse.external
        before = bound() if decides else 0
        check = "channel-slice" if is_channel_concat(node) else "concat-slice"
        added = [value.name for value in node.inputs]
        for value, (offset, stride) in zip(node.inputs, slice_places(node)):
            reuse.aliases[value.name] = Alias(value.name, node.outputs[0].name, offset, check, stride)
        after = bound() if decides else 0
        if after > before:
            for name in added:
                del reuse.aliases[name]
            reuse.refusals.append((node.name, f"concat in place would raise the live-set bound "
                                              f"from {before} to {after} bytes"))
        else:
            reuse.elided.append(node.name)
    return reuse


def _levels_tiled(graph):
    from mcudeploy.options import TilingRegion
    from mcudeploy.plan.levels import find_levels
    from mcudeploy.plan.split import given_split
    from mcudeploy.plan.tiling import apply_tiling
    points, levels = find_levels(graph)
    regions = tuple(TilingRegion(level.start, level.end, 4, 1) for level in levels)
    tiled = apply_tiling(graph, regions, verify=False)
    return given_split(graph, points, tiled).external


def _early_input():
    """concat([a, b]) with ``a`` made first and a 16 KiB pair alive before ``b``: in place, the
    concat's 2 KiB would be held from ``a`` on and raise the bound at that pair (33 -> 34 KiB);
    a second concat of two late inputs goes in place."""
    import numpy as np

    from mcudeploy.ir import DType, Graph
    graph = Graph("early_input")
    x = graph.add_input("x", DType.FLOAT32, (1, 4, 8, 8), layout="NCHW")
    rng = np.random.default_rng(0)

    def conv(value, channels, name):
        weight = graph.add_constant(name + "_w", rng.standard_normal((channels, value.shape[1], 1, 1)).astype(np.float32))
        return graph.add_node("Conv", [value, weight, None], name=name).outputs[0]
    a = graph.add_node("Relu", [x], name="a").outputs[0]
    big = conv(x, 64, "big")
    big2 = graph.add_node("Relu", [big], name="big2").outputs[0]
    b = conv(big2, 4, "b")
    joined = graph.add_node("Concat", [a, b], {"axis": 1}, name="early").outputs[0]
    d, e = conv(joined, 4, "d"), conv(joined, 4, "e")
    late = graph.add_node("Concat", [d, e], {"axis": 1}, name="late").outputs[0]
    graph.outputs = [graph.add_node("Relu", [late], name="out").outputs[0]]
    return graph


def _case(name):
    if name == "early-input":
        return _early_input(), frozenset(), lambda node: None       # every producer may write slices
    graph = unet(64)
    external = _levels_tiled(graph) if name == "levels-tiled" else frozenset()
    # the N6's kernels write strided outputs where the reference kernels refuse to
    return graph, external, choose_kernels(graph, load_target("stm32n6")).strided_output_refusal


@pytest.mark.parametrize("name", ["untiled", "levels-tiled", "early-input"])
def test_incremental_concat_decisions_equal_the_full_recomputation(name):
    graph, external, strided = _case(name)
    nodes = list(graph.nodes)
    lives = tensor_lives(graph, [n.name for n in nodes], io_in_arena=False, scratch_bytes=None)
    ours = find_reuse(graph, nodes, lives, ALIGNMENT, overlap=False, external=external, strided_output=strided)
    reference = _reference(graph, nodes, lives, external, strided)
    assert ours.aliases == reference.aliases
    assert ours.elided == reference.elided
    assert ours.refusals == reference.refusals
    # each case exercises the rule it is there for, so the equalities are not vacuous
    concats = [n.name for n in nodes if n.op == "Concat"]
    decided = [node for node, reason in ours.refusals if "live-set bound" in reason]
    if name == "early-input":
        assert decided == ["early"] and "late" in ours.elided
    elif name == "levels-tiled":
        assert sum(c in ours.elided and c not in external for c in concats) > 10
