"""Pass pipelines: explicit ordered lists, each order justified where it is written.

``run_pipeline(graph, "cleanup")`` runs a named pipeline (``PIPELINES``) or any list of
passes, verifying the graph after every pass (``verify_each``).
"""
from __future__ import annotations

from typing import Sequence

from ..errors import UsageError
from ..ir import Graph
from .base import Pass, run_passes
from .cancel_transposes import CancelTransposes
from .fold_batchnorm import FoldBatchNorm
from .fold_constants import FoldConstants
from .fuse_activation import FuseActivation
from .global_pool_to_mean import GlobalPoolToMean
from .matmul_to_gemm import MatMulToGemm
from .normalize_gemm import NormalizeGemm
from .remove_noops import RemoveNoOps
from .to_nhwc import ToNHWC


def cleanup(change_io: bool = False) -> list[Pass]:
    """The standard float-graph cleanup before quantization and mapping."""
    return [
        # Importers leave constant sub-graphs (QuantizeLinear of float weights, shape
        # arithmetic); folding first gives the later passes constant weights to work on.
        FoldConstants(),
        # Identity / Dropout between Conv and BN or Relu would block both folds below.
        RemoveNoOps(),
        # BN before activation fusion: Conv -> BN -> Relu needs the BN gone for the Relu to
        # sit right after the Conv, and BN folding refuses a producer that already clamps.
        FoldBatchNorm(),
        # Fuse before the layout change: fewer nodes for Transposes to move through; the
        # Mul / Add left by an unfoldable BN can take the clamp too.
        FuseActivation(),
        # Layout change last among the rewrites, on the smallest graph; it sinks, cancels
        # and hoists Transposes itself.
        ToNHWC(change_io=change_io),
        # Transposes the model had of its own (not created by ToNHWC) and those its
        # rewrites exposed.
        CancelTransposes(),
        # Transposed / reshaped constants left behind, then identity reshapes and
        # Transposes produced by composition.
        FoldConstants(),
        RemoveNoOps(),
    ]


def integer_forms() -> list[Pass]:
    """The cleanup, then the forms TFLite's integer kernels take: what quantization
    calibrates and what a deployment runs (the ops the C runtime implements)."""
    return cleanup() + [
        # MatMul + bias Add -> Gemm first: the Gemm it makes is already normal.
        MatMulToGemm(),
        NormalizeGemm(),
        # Needs NHWC (the layout pass ran in cleanup).
        GlobalPoolToMean(),
    ]


PIPELINES = {
    "cleanup": cleanup,                                   # NCHW graph inputs / outputs kept
    "integer_forms": integer_forms,                       # cleanup + forms of the integer kernels
    "cleanup_nhwc_io": lambda: cleanup(change_io=True),   # graph inputs / outputs become NHWC
    "none": lambda: [],
}


def run_pipeline(graph: Graph, name_or_list: str | Sequence[Pass], *,
                 verify_each: bool = True) -> list[str]:
    """Run a named pipeline or a list of passes on ``graph`` in place; return the names of
    the passes that changed it."""
    if isinstance(name_or_list, str):
        if name_or_list not in PIPELINES:
            raise UsageError(f"unknown pass pipeline {name_or_list!r}; choose one of "
                             f"{', '.join(sorted(PIPELINES))}")
        passes = PIPELINES[name_or_list]()
    else:
        passes = list(name_or_list)
    return run_passes(graph, passes, verify_each=verify_each)
