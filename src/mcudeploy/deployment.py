"""The ``Deployment`` record: everything about one model on one target with one set of
options, as every command after the driver sees it.

Built by :func:`mcudeploy.driver.deploy` (the only place that runs the stages); consumed by
``plan``, ``generate``, ``validate --on``, ``run --engine c-*``, ``lint``, and the estimator
and the search. Because all of them read the same record, no two commands can disagree
about what will run: the graph as deployed, the integer parameters the C code copies, the
device of every node, the kernel variant of every node, the memory plan with its final
region placement, and the ledger with its fit verdict.

``mapping`` is the device of every node *in the code the deployment produces*, for one
executor (``options.executor``, :mod:`mcudeploy.mapping.executor`): with ``mcudeploy`` (the
default) every node is mcudeploy's CPU code, even on an NPU target (mcudeploy writes no NPU
code); with ``vendor-npu`` the NPU nodes are the vendor NPU compiler's. ``npu_mapping`` is
what the NPU could take (the hardware mapping, with the reasons of every CPU node), kept on
NPU targets as information: "with --executor vendor-npu these nodes would run on the NPU".

Invariants (checked by :func:`check_deployment` in tests):

* ``plan.order`` lists every node of ``graph``; every non-constant value of ``graph`` that
  lives in the arena has a placement in ``plan.tensors``, in ``plan.placement.arena_region``;
* ``plan.weights`` == ``plan.placement.weights`` (one decision, read by ledger and codegen);
* ``params`` has every node when ``precision == "integer"`` and is empty otherwise;
* ``kernels.choices`` has every node; ``mapping`` is None only without a target;
* ``mapping.executor == options.executor`` on an NPU target; with ``mcudeploy`` no node of
  ``mapping`` is on the NPU.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import DoesNotFitError, UsageError
from .ir import Graph
from .kernels import KernelSelection
from .mapping import NPU, Mapping, Partition, executor_summary, partitions
from .options import DeploymentOptions
from .plan.ledger import Ledger
from .plan.memory_plan import PlacedMemoryPlan
from .plan.memory_transform import MemoryTransform
from .plan.variant_arena import VariantArena
from .targets import Target


@dataclass
class Deployment:
    """One model on one target with one set of options (module docstring)."""
    source: Path                        # the model file
    graph: Graph                        # as deployed: cleaned, QDQ -> integer, Pads folded
    precision: str                      # float | qdq | integer | mixed (ir.precision)
    target: Target | None
    options: DeploymentOptions
    mapping: Mapping | None             # device of every node (None without a target)
    kernels: KernelSelection            # kernel variant of every node, with its reason
    plan: PlacedMemoryPlan              # order, offsets, scratch, final regions (plan.placement)
    ledger: Ledger                      # every byte per region against capacity; fit verdict
    warnings: list[str] = field(default_factory=list)
    _params: dict[str, Any] | None = field(default=None, repr=False)
    memory_transform: MemoryTransform | None = None   # tiling / graph split applied (driver step 2b)
    npu_mapping: Mapping | None = None  # what the NPU could take (NPU targets only): information
    kernel_arena: VariantArena | None = None   # why each fast variant stayed or fell back (driver step 4)

    @property
    def executor(self) -> str:
        """Who runs the nodes of the generated code: ``mcudeploy`` or ``vendor-npu``."""
        return self.options.executor

    def executor_line(self) -> str | None:
        """Who runs the nodes (and, on an NPU target, what the other executor would do); None
        without a target."""
        if self.target is None or self.mapping is None:
            return None
        return executor_summary(self.mapping, self.npu_mapping, self.target)

    def partitions(self) -> list[Partition]:
        """The runs of consecutive nodes (plan order) on one device of :attr:`mapping`."""
        if self.mapping is None:
            return []
        return partitions(self.graph, self.mapping, self.plan.order)

    @property
    def params(self) -> dict[str, Any]:
        """Prepared integer parameters by node ({} unless integer): the multipliers, shifts and
        clamps the C code copies. Computed on first use (planning and estimating do not need
        them) by the integer kernels' ``prepare``
        (:func:`~mcudeploy.reference.int_executor.prepare_graph`), which raises for a node the
        integer arithmetic cannot run."""
        if self._params is None:
            from .reference.int_executor import prepare_graph  # not needed to plan or estimate
            self._params = prepare_graph(self.graph) if self.precision == "integer" else {}
        return self._params

    @property
    def fits(self) -> bool:
        return self.ledger.fits

    @property
    def name(self) -> str:
        return self.source.name

    def require_target(self, what: str) -> Target:
        """The target, or :class:`UsageError` naming ``what`` needs one (a deployment without
        a target has no core, regions or NPU to read)."""
        if self.target is None:
            raise UsageError(f"{self.name}: {what} needs a target (--target NAME or a .toml file)")
        return self.target

    def require_fit(self, what: str = "") -> None:
        """:class:`DoesNotFitError` (exit 8) naming the regions and bytes, unless it fits."""
        if not self.fits:
            prefix = f"{self.name}: " + (f"{what}: " if what else "")
            raise DoesNotFitError(prefix + self.ledger.verdict())

    def summary(self) -> dict[str, Any]:
        """The figures every report prints (JSON-ready)."""
        placement = self.plan.placement
        return {"model": str(self.source), "target": self.target.name if self.target else None,
                "precision": self.precision, "nodes": len(self.graph.nodes),
                "arena_bytes": self.plan.arena_bytes,
                "no_reuse_bound_bytes": self.plan.no_reuse_bound_bytes,
                "arena_region": placement.arena_region if placement else None,
                "scratch_bytes": sum(p.size for p in self.plan.scratch.values()),
                "fits": self.fits, "verdict": self.ledger.verdict(),
                "kernel_variants": self.kernels.counts(), "executor": self.executor,
                "npu_offload_macc": round(self.mapping.macc_rate, 4) if self.mapping else None,
                "vendor_npu_offload_macc": round(self.npu_mapping.macc_rate, 4) if self.npu_mapping else None}

    def to_json(self) -> dict[str, Any]:
        """The whole record as JSON: summary, options (as written back to a --config file),
        plan (every buffer's region and offset), ledger and kernel choices."""
        return {**self.summary(), "options": self.options.to_dict(), **self.plan.to_json(),
                "ledger": [line.__dict__ for line in self.ledger.lines],
                "regions": [{**r.__dict__, "overflow": r.overflow} for r in self.ledger.regions],
                "kernels": self.kernels.to_json(), "warnings": list(self.warnings),
                "kernel_arena": self.kernel_arena.to_json() if self.kernel_arena else None,
                "memory_transform": self.memory_transform.to_json() if self.memory_transform else None}


def check_deployment(deployment: Deployment) -> list[str]:
    """Every broken invariant of the record (module docstring), one sentence each."""
    problems = []
    graph, plan = deployment.graph, deployment.plan
    if sorted(plan.order) != sorted(n.name for n in graph.nodes):
        problems.append("plan.order does not list every node exactly once")
    if not isinstance(plan, PlacedMemoryPlan):
        problems.append("the plan has no region placement")
    else:
        regions = {p.region for p in [*plan.tensors.values(), *plan.scratch.values()]}
        if regions - {plan.placement.arena_region, plan.placement.external_region, *plan.placement.arena_banks}:
            problems.append(f"tensors placed in {sorted(regions)}, the placement says "
                            f"{plan.placement.arena_region}")
        if plan.weights != plan.placement.weights:
            problems.append("plan.weights differ from the placement's weights")
    if deployment.precision == "integer" and set(deployment.params) != {n.name for n in graph.nodes}:
        problems.append("params do not cover every node")
    if set(deployment.kernels.choices) != {n.name for n in graph.nodes}:
        problems.append("kernel choices do not cover every node")
    mapping = deployment.mapping
    if mapping is not None and deployment.npu_mapping is not None and mapping.executor != deployment.executor:
        problems.append(f"the mapping is for executor {mapping.executor}, the options say {deployment.executor}")
    if mapping is not None and mapping.executor == "mcudeploy" and mapping.on(NPU):
        problems.append("executor mcudeploy (CPU code) with nodes mapped to the NPU")
    return problems
