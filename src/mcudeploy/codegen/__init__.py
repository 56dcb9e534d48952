"""C code generation: a planned, quantized graph -> a C project (see :mod:`.emit_project`).

Decides nothing: the order, offsets and regions come from the memory plan
(:mod:`mcudeploy.plan.memory_plan`), every number from the integer kernels' ``prepare``
(:func:`mcudeploy.reference.int_executor.prepare_graph`); this package only writes text
(Jinja2 templates in ``templates/``). :func:`generate_project` is the one-call form.
"""
from __future__ import annotations

from pathlib import Path

from ..ir import Graph
from .emit_project import ProjectOptions, TestVectors, generate_files
from .output_dir import MANIFEST, write_project
from .scratch import scratch_bytes

__all__ = ["MANIFEST", "ProjectOptions", "TestVectors", "generate_files", "generate_project",
           "plan_for_codegen", "scratch_bytes", "write_project"]


def plan_for_codegen(graph: Graph, target=None, alignment: int = 16):
    """The memory plan the generated code follows: inputs and outputs in the arena, the
    runtime kernels' scratch buffers included."""
    from ..plan.memory_plan import plan_memory

    return plan_memory(graph, target=target, alignment=alignment, io_in_arena=True,
                       scratch_bytes=scratch_bytes, reuse=True)


def generate_project(graph: Graph, folder: Path, options: ProjectOptions, *, plan=None,
                     force: bool = False) -> list[Path]:
    """Plan (unless ``plan`` is given), generate and write the project into ``folder``."""
    from ..reference.int_executor import prepare_graph

    params = prepare_graph(graph)
    plan = plan if plan is not None else plan_for_codegen(graph, options.target, options.alignment)
    return write_project(generate_files(graph, plan, params, options), folder, force=force)
