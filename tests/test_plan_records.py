"""The memory plan's two records: :func:`plan_memory` returns the frozen planned record
(tensors in the planned ``"arena"``), :meth:`MemoryPlan.with_placement` / ``deploy`` the frozen
placed one (target regions, the placement it came from); :class:`PlanOptions` is the one
mapping from the deployment options to the planner's keywords."""
from __future__ import annotations

import dataclasses

import pytest

from mcudeploy.driver import deploy
from mcudeploy.ir import DType, Graph, verify
from mcudeploy.options import DeploymentOptions
from mcudeploy.plan.memory_plan import MemoryPlan, PlacedMemoryPlan, PlanOptions, plan_arguments, plan_memory
from mcudeploy.plan.placement import NO_TARGET_ARENA


def _chain() -> Graph:
    graph = Graph("chain")
    x = graph.add_input("x", DType.FLOAT32, (1, 4, 4, 2))
    a = graph.add_node("Sigmoid", [x], name="a").outputs[0]
    b = graph.add_node("Tanh", [a], name="b").outputs[0]
    graph.outputs = [graph.add_node("Add", [b, a], name="c").outputs[0]]
    verify(graph)
    return graph


def test_planned_record_is_frozen_and_unplaced():
    plan = plan_memory(_chain())
    assert type(plan) is MemoryPlan and not hasattr(plan, "placement")
    assert {p.region for p in plan.tensors.values()} == {NO_TARGET_ARENA}
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.arena_bytes = 0   # type: ignore[misc]


@pytest.mark.parametrize("target", [None, "stm32h743"])
def test_deployment_holds_the_placed_record(target):
    deployment = deploy(_chain(), DeploymentOptions(target=target))
    plan = deployment.plan
    assert isinstance(plan, PlacedMemoryPlan)
    regions = {p.region for p in [*plan.tensors.values(), *plan.scratch.values()]}
    assert regions == {plan.placement.arena_region}
    assert plan.to_json()["placement"] == plan.placement.to_json()
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.placement = None   # type: ignore[misc]
    # the placed record keeps every planned figure
    planned = plan_memory(deployment.graph, kernels=deployment.kernels, **plan_arguments(deployment.options))
    assert (planned.order, planned.arena_bytes, planned.allocator) == (plan.order, plan.arena_bytes, plan.allocator)
    assert {n: (p.offset, p.size) for n, p in planned.tensors.items()} == \
        {n: (p.offset, p.size) for n, p in plan.tensors.items()}


@pytest.mark.parametrize("concat_in_place, expected", [(True, None), (False, False)])
def test_plan_options_mapping(concat_in_place, expected):
    options = DeploymentOptions(alignment=32, reuse=False, concat_in_place=concat_in_place, time_limit=2.0)
    plan_options = PlanOptions.of(options)
    assert plan_options == PlanOptions(alignment=32, reuse=False, concat_in_place=expected, time_limit=2.0,
                                       io_in_arena=options.io_in_arena, overlap=options.overlap,
                                       schedule=options.schedule)
    assert plan_arguments(options) == dataclasses.asdict(plan_options)
    assert hash(plan_options) == hash(PlanOptions.of(options))
