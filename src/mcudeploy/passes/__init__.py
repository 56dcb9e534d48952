"""Graph passes: one pass per module, each a :class:`~mcudeploy.passes.base.Pass`.
Pipelines (explicit ordered lists) live in :mod:`mcudeploy.passes.pipelines`."""
from .base import Pass, run_passes
from .cancel_transposes import CancelTransposes
from .fold_batchnorm import FoldBatchNorm
from .fold_constants import FoldConstants
from .fuse_activation import FuseActivation
from .pipelines import PIPELINES, run_pipeline
from .remove_noops import RemoveNoOps
from .to_nhwc import ToNHWC

__all__ = ["PIPELINES", "CancelTransposes", "FoldBatchNorm", "FoldConstants", "FuseActivation",
           "Pass", "RemoveNoOps", "ToNHWC", "run_passes", "run_pipeline"]
