"""NegativeLogLikelihoodLoss in float64: ``loss = -X[n, target, d...] * w`` with ``w`` the
class weight (1 without weights) and 0 at ``ignore_index``; ``mean`` divides the sum by
``sum(w)``."""
from __future__ import annotations

import numpy as np

from ...ir import Node
from ._common import output_dtype, wide
from .registry import kernel


@kernel("NegativeLogLikelihoodLoss")
def negative_log_likelihood_loss(node: Node, inputs: list) -> list[np.ndarray]:
    x, target = wide(inputs[0]), np.asarray(inputs[1], dtype=np.int64)
    weight = inputs[2] if len(inputs) > 2 else None
    ignored = np.zeros(target.shape, bool)
    if node.attrs["ignore_index"]:
        ignored = target == node.attrs["ignore_index"][0]
    safe = np.where(ignored, 0, target)
    picked = np.take_along_axis(x, np.expand_dims(safe, 1), axis=1).squeeze(1)
    w = np.ones(target.shape) if weight is None else wide(weight)[safe]
    w = np.where(ignored, 0.0, w)
    loss = -picked * w
    reduction = node.attrs["reduction"]
    if reduction == "sum":
        loss = loss.sum()
    elif reduction == "mean":
        loss = loss.sum() / w.sum()
    return [np.asarray(loss).astype(output_dtype(node))]
