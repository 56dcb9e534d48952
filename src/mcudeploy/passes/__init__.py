"""Graph passes: one pass per module, each a :class:`~mcudeploy.passes.base.Pass`.
Pipelines (explicit ordered lists) live in :mod:`mcudeploy.passes.pipelines`."""
from .base import Pass, run_passes

__all__ = ["Pass", "run_passes"]
