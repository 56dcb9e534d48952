"""The pipeline, written once: a model file + a target + options -> one :class:`Deployment`.

    deploy(model, options, *, target=None, input_shapes=None, graph=None) -> Deployment

Straight line, ``ir.verify`` between the graph stages:

1. **load** (:func:`load_graph`): import the file (format from its bytes), verify;
2. **clean up** (:func:`deployable_graph`): a QDQ ONNX model becomes the integer graph the
   code runs (:func:`~mcudeploy.passes.qdq_to_quantized.to_integer_graph`, which runs the
   cleanup pipeline first); a float model gets the ``integer_forms`` pipeline (BN folding,
   activation fusion, NHWC, and the op forms the integer kernels take: what quantization
   will produce); a full-integer model stays as imported; then every zero Pad is folded into
   its Conv (unless ``keep_model_tensors``: TFLite Micro's offline plan must see the file's
   own tensors);
   2b. **memory transformations** (:func:`~mcudeploy.plan.memory_transform.transform_for_memory`):
   ``[tiling]`` runs regions tile by tile, ``[split]`` moves the tensors that cross a cut to
   external memory - graph rewrites, decided once, before anything is mapped or planned;
3. **map**: what the hardware could run (:func:`~mcudeploy.mapping.map_graph`, with
   ``options.force_cpu``), then the device of every node in the code the deployment
   produces (:func:`~mcudeploy.mapping.executed_mapping` for ``options.executor``:
   mcudeploy's CPU code by default, every node on the CPU; ``vendor-npu``: the NPU nodes
   run by the vendor's NPU compiler);
4. **kernels**: the variant of every node from the target's core
   (:func:`~mcudeploy.kernels.choose_kernels`), and what the fast ones cost in arena over the
   reference kernels, decided by plans (:func:`~mcudeploy.plan.variant_arena.choose_for_arena`;
   ``kernels = arena`` keeps only the fast variants that cost none);
5. **plan**: order, liveness, proved reuse, offsets (:func:`~mcudeploy.plan.memory_plan.
   plan_memory`, with the chosen variants' scratch and overlap rules); when the optimised
   variants are what breaks the fit (their scratch, their stricter overlap), fewer of them
   run (``auto``: the fewest that make it fit, then none) and the deployment says so
   (speed first, never at the cost of a fit);
6. **place**: the regions of the arena, the fixed items and the weights, once
   (:func:`~mcudeploy.plan.placement.place_regions`), written into the plan;
7. **ledger**: every byte per region against capacity, and the fit verdict; the weights as
   the arrays the code generator will write (:mod:`~mcudeploy.kernels.emitted_arrays`: the
   variants' layouts and the requantization arrays, from the integer parameters).

The integer parameters of every node (what the C code copies) are computed on first use
(:attr:`Deployment.params`): planning, estimating and searching do not need them.

A deployment that does not fit is a result, not an error: ``plan`` prints its ledger and
exits 8, ``generate`` refuses it (:meth:`Deployment.require_fit`). Commands load models
through :func:`load_graph` and build deployments through :func:`deploy`, nothing else.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from .deployment import Deployment
from .errors import McuDeployError, UsageError
from .importers import InputShapes, load_model
from .ir import Graph, precision, verify
from .kernels import choose_kernels
from .kernels.emitted_arrays import emitted_arrays, stored_sizes
from .mapping import CPU, Partition, check_executor, executed_mapping, map_graph, partition_graph
from .options import DeploymentOptions
from .passes.fold_pads import FoldPads
from .passes.pipelines import run_pipeline
from .passes.qdq_to_quantized import to_integer_graph
from .plan.ledger import build_ledger, fixed_items
from .plan.memory_plan import plan_arguments, plan_memory
from .plan.memory_transform import transform_for_memory
from .plan.placement import no_target_placement, place_regions
from .plan.variant_arena import VariantArena, choose_for_arena
from .targets import Target, load_memory_pools, load_target

if TYPE_CHECKING:
    from .kernels import KernelSelection
    from .plan.ledger import Ledger
    from .plan.memory_plan import MemoryPlan, PlacedMemoryPlan
    from .plan.memory_transform import MemoryTransform
    from .plan.placement import RegionPlacement


def load_graph(path: str | Path, *, input_shapes: InputShapes | None = None,
               pipeline: str = "none") -> Graph:
    """Import a model and run a pass pipeline (``"none"``: the graph as imported)."""
    graph = load_model(path, input_shapes=input_shapes)
    verify(graph)
    run_pipeline(graph, pipeline)
    return graph


def deployable_graph(graph: Graph, *, keep_model_tensors: bool = False) -> Graph:
    """The graph as it will be deployed (step 2 of the module docstring); ``graph`` itself
    is rewritten unless it is QDQ (then a converted copy is returned)."""
    kind = precision(graph)
    if kind == "qdq":
        graph = to_integer_graph(graph)
    elif kind == "float":
        run_pipeline(graph, "integer_forms")
    if not keep_model_tensors:
        run_pipeline(graph, [FoldPads()])
    return graph


def resolve_target(options: DeploymentOptions) -> Target | None:
    """The target the options name (with ``memory_pools`` replacing its regions), or None."""
    if options.target is None:
        if options.memory_pools is not None:
            raise UsageError(f"memory pools {options.memory_pools}: give the target they belong to (--target)")
        return None
    target = load_target(options.target)
    if options.memory_pools is not None:
        target = target.with_regions(load_memory_pools(Path(options.memory_pools)), options.memory_pools)
    return target


def deploy(model: str | Path | Graph, options: DeploymentOptions = DeploymentOptions(), *,
           target: Target | None = None, input_shapes: InputShapes | None = None,
           keep_model_tensors: bool = False) -> Deployment:
    """Build the deployment of ``model`` (module docstring): a model file, or a graph already
    loaded (it is copied, never changed). ``target`` overrides ``options.target``."""
    target = target if target is not None else resolve_target(options)
    check_executor(options.executor, target)
    if isinstance(model, Graph):
        loaded, source = model.copy(), Path(str(model.metadata.get("path", model.name)))
    else:
        loaded, source = load_graph(model, input_shapes=input_shapes), Path(model)
    deployed = deployable_graph(loaded, keep_model_tensors=keep_model_tensors)
    # 2b. memory transformations (plan/memory_transform.py): spatial tiling, then graph split,
    #     rewrites of the deployed graph decided once, before anything is mapped or planned
    transform = transform_for_memory(deployed, options, target)
    kind = precision(deployed)
    hardware = mapping = None
    if target is not None:
        hardware = map_graph(deployed, target, options.force_cpu)
        mapping = executed_mapping(hardware, options.executor, target)
    kernels, kernel_arena = _kernels_for_arena(deployed, target, options, transform)
    params = integer_params(deployed)
    placed = _plan_and_place(deployed, kernels, target, options, transform,
                             kernel_arena.plan if kernel_arena else None, params)
    warnings = transform.warnings()
    if not placed[2].fits and options.kernels in ("auto", "arena") and set(kernels.counts()) != {"reference"}:
        kernels, placed, kernel_arena, warning = _fit_with_fewer_fast_variants(deployed, target, options, transform,
                                                                               kernels, kernel_arena, params)
        warnings += [warning] if warning else []
    plan, _placement, ledger = placed
    npu_mapping = hardware if target is not None and target.npu is not None else None
    return Deployment(source, deployed, kind, target, options, mapping, kernels, plan, ledger,
                      warnings=warnings, _params=params, memory_transform=transform, npu_mapping=npu_mapping,
                      kernel_arena=kernel_arena)


def _fit_with_fewer_fast_variants(deployed: Graph, target: Target | None, options: DeploymentOptions,
                                  transform: MemoryTransform, kernels: KernelSelection,
                                  decision: VariantArena | None, params: dict | None) -> tuple:
    """Step 5b: the fast variants' scratch and stricter overlap rules cost arena bytes; when they
    are what breaks the fit, fewer of them run (a deployment that fits beats a faster one that
    does not), and the record says so: with ``auto`` the ``arena`` search with "the deployment
    fits" as its test (the fewest fall back that make it fit, greedy), then the reference
    kernels everywhere. Returns (kernels, placed, decision, warning or None); unchanged when
    nothing fits better."""
    fastest = choose_kernels(deployed, target, options.kernels)
    if options.kernels == "auto" and decision is not None and decision.costly:
        def fits(selection: KernelSelection, plan: MemoryPlan) -> bool:
            return _plan_and_place(deployed, selection, target, options, transform, plan, params)[2].fits
        fewer = replace(_decide(deployed, fastest, "arena", options, transform, fits), preference="auto")
        placed = _plan_and_place(deployed, fewer.selection, target, options, transform, fewer.plan, params)
        if placed[2].fits:
            return (fewer.selection, placed, fewer,
                    f"every fast kernel variant needs {decision.plan.arena_bytes} bytes of arena, more than fits; "
                    f"{len(fewer.fallbacks)} node(s) run the reference kernel instead, the fewest the greedy rule "
                    f"found (arena {placed[0].arena_bytes} bytes; plan/variant_arena.py)")
    reference = choose_kernels(deployed, target, "reference")
    placed = _plan_and_place(deployed, reference, target, options, transform, params=params)
    if not placed[2].fits:
        return kernels, _plan_and_place(deployed, kernels, target, options, transform,
                                        decision.plan if decision else None, params), decision, None
    return (reference, placed, None, "the optimised kernel variants need more arena than fits; the reference "
                                     f"kernels run instead (arena {placed[0].arena_bytes} bytes)")


def _decide(deployed: Graph, fastest: KernelSelection, preference: str, options: DeploymentOptions,
            transform: MemoryTransform, fits=None) -> VariantArena:
    arguments = plan_arguments(options)
    return choose_for_arena(deployed, fastest, preference, lambda selection: plan_memory(
        deployed, kernels=selection, external=transform.external, **arguments), fits)


def _kernels_for_arena(deployed: Graph, target: Target | None, options: DeploymentOptions,
                       transform: MemoryTransform) -> tuple[KernelSelection, VariantArena | None]:
    """Step 4: the variant of every node, and what the fast ones cost in arena; with ``arena``
    only the fast ones that cost none (:mod:`~mcudeploy.plan.variant_arena`, planned with the
    deployment's own plan options)."""
    kernels = choose_kernels(deployed, target, options.kernels)
    if options.kernels == "reference" or set(kernels.counts()) == {"reference"}:
        return kernels, None
    decision = _decide(deployed, kernels, options.kernels, options, transform)
    return decision.selection, decision


def partition_deployment(deployment: Deployment, partition: Partition) -> Deployment:
    """The deployment of one CPU partition of a ``vendor-npu`` deployment: its nodes as a graph
    of their own (:func:`~mcudeploy.mapping.partition_graph`), deployed on the same target with
    the same memory options as mcudeploy's CPU code (the graph rewrites of step 2b are already
    in it, so their options are left out). The RAM regions the vendor's compiler is given for
    its activations (the deployment's arena regions: the hand-off's memory pools) are reserved,
    so the partition's own arena never shares their bytes."""
    if partition.device != CPU:
        raise UsageError(f"partition {partition.index} runs on the {partition.device}: only CPU partitions "
                         "are mcudeploy's code")
    placement = deployment.plan.placement
    vendor = {placement.arena_region, *placement.arena_banks}
    if placement.external_region is not None:
        vendor.add(placement.external_region)
    reserved = tuple(sorted(set(deployment.options.reserve_regions) | vendor))
    options = replace(deployment.options, executor="mcudeploy", reserve_regions=reserved, activation_region=None,
                      force_cpu=(), tiling_regions=(),
                      tiling_auto=False, channel_splits=(), input_channel_splits=(), split_points=(),
                      split_auto=False)
    graph = partition_graph(deployment.graph, partition)
    graph.metadata["path"] = f"{deployment.name}.cpu{partition.index}"
    return deploy(graph, options, target=deployment.target)


def _plan_and_place(deployed: Graph, kernels: KernelSelection, target: Target | None, options: DeploymentOptions,
                    transform: MemoryTransform, planned: MemoryPlan | None = None, params: dict | None = None,
                    ) -> tuple[PlacedMemoryPlan, RegionPlacement, Ledger]:
    """Steps 5-7: plan (unless ``planned``, the plan of ``kernels`` already made), place, ledger
    (its weights as compiled, from the graph's integer parameters: :func:`integer_params`)."""
    plan = planned if planned is not None else plan_memory(deployed, kernels=kernels, external=transform.external,
                                                           **plan_arguments(options))
    fixed = fixed_items(deployed, plan, options)
    sizes = stored_sizes(deployed, kernels, params) if params is not None else None
    placement = (place_regions(deployed, plan.arena_bytes, target, options, fixed, plan.external_bytes, plan=plan,
                               weight_sizes=sizes)
                 if target is not None else no_target_placement(deployed, plan.arena_bytes, fixed, plan.external_bytes))
    plan = plan.with_placement(placement)
    arrays = emitted_arrays(deployed, kernels, params, placement.weights) if params is not None else None
    return plan, placement, build_ledger(deployed, plan, placement, target, options, arrays)


def integer_params(graph: Graph) -> dict | None:
    """The prepared integer parameters of a full-integer graph (what the C code copies,
    :func:`~mcudeploy.reference.int_executor.prepare_graph`; computed once per deployment), or
    None: a model that is not full-integer, or that the integer kernels cannot prepare (no C
    code either; the ledger then counts the graph's constants)."""
    if precision(graph) != "integer":
        return None
    from .reference.int_executor import prepare_graph  # not needed to plan a float model
    try:
        return prepare_graph(graph)
    except McuDeployError:
        return None
