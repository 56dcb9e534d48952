"""BatchNormalization (inference): ``Y = (X - mean) / sqrt(var + epsilon) * scale + B`` per
channel, in float64. The channel axis is the layout's for rank-4 inputs, else axis 1
(axis 0 for rank 1), as in :mod:`mcudeploy.ir.opdefs.normalization`."""
from __future__ import annotations

import numpy as np

from ...ir import Node
from ._common import output_dtype, wide
from .registry import kernel


@kernel("BatchNormalization")
def batch_normalization(node: Node, inputs: list) -> list[np.ndarray]:
    x, scale, bias, mean, var = (wide(a) for a in inputs[:5])
    if x.ndim == 4:
        axis = 1 if node.attrs["layout"] == "NCHW" else 3
    else:
        axis = min(1, x.ndim - 1)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]

    def per_channel(a: np.ndarray) -> np.ndarray:
        return a.reshape(shape)

    inverse = per_channel(scale) / np.sqrt(per_channel(var) + node.attrs["epsilon"])
    y = (x - per_channel(mean)) * inverse + per_channel(bias)
    return [y.astype(output_dtype(node))]
