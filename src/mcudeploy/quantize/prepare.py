"""Float graph -> the float graph the quantizer calibrates and quantizes: a cleaned copy in
the forms TFLite's integer kernels take (the ``integer_forms`` pass pipeline of
:mod:`mcudeploy.passes.pipelines`: cleanup, MatMul + Add -> Gemm, normalised Gemm, NHWC
GlobalAveragePool -> ReduceMean). Node and value names are kept, so calibration ranges and
reports refer to the model's names.
"""
from __future__ import annotations

from ..ir import Graph
from ..passes import run_pipeline


def prepare_for_quantization(graph: Graph, *, pipeline: str = "integer_forms") -> Graph:
    """A copy of ``graph`` after ``pipeline`` (the original is not changed)."""
    prepared = graph.copy()
    run_pipeline(prepared, pipeline)
    return prepared
