"""The pipeline as straight-line functions, with ``ir.verify`` between stages.

Commands call these instead of chaining stages themselves, so that the order of stages is
written down once. Stages not built yet (quantize, map, plan, codegen) will be added here
in pipeline order.
"""
from __future__ import annotations

from pathlib import Path

from .importers import InputShapes, load_model
from .ir import Graph, verify
from .passes.pipelines import run_pipeline


def import_and_clean(path: str | Path, *, input_shapes: InputShapes | None = None,
                     pipeline: str = "cleanup") -> Graph:
    """Import a model and run a pass pipeline (``"none"`` for the graph as imported).

    The importer verifies its graph; :func:`run_pipeline` verifies after every pass.
    """
    graph = load_model(path, input_shapes=input_shapes)
    verify(graph)
    run_pipeline(graph, pipeline)
    return graph


def load_for_deployment(path: str | Path, *, input_shapes: InputShapes | None = None,
                        fold_pads: bool = True) -> Graph:
    """The graph that planning and code generation work on: a full-integer model as
    imported, an ONNX QDQ model converted to integer ops (the same conversion ``run`` and
    ``validate`` use), a float model as imported; then, unless ``fold_pads`` is False, every
    zero Pad folded into its Conv (``plan --export-tflm`` keeps them: TFLite Micro must see
    the model's own tensors)."""
    from .passes.fold_pads import FoldPads
    from .passes.pipelines import run_pipeline
    from .validate.engines import precision, to_integer_graph

    graph = load_model(path, input_shapes=input_shapes)
    verify(graph)
    if precision(graph) == "qdq":
        graph = to_integer_graph(graph)
        verify(graph)
    if fold_pads:
        run_pipeline(graph, [FoldPads()])
    return graph
