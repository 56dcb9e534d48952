"""Tile, Expand, SpaceToDepth and Trilu: data movement (values never change)."""
from __future__ import annotations

import numpy as np

from ...ir import Node
from ._common import from_nhwc, to_nhwc
from .registry import kernel


@kernel("Tile")
def tile(node: Node, inputs: list) -> list[np.ndarray]:
    return [np.tile(inputs[0], node.attrs["repeats"])]


@kernel("Expand")
def expand(node: Node, inputs: list) -> list[np.ndarray]:
    return [np.ascontiguousarray(np.broadcast_to(inputs[0], node.outputs[0].shape))]


@kernel("SpaceToDepth")
def space_to_depth(node: Node, inputs: list) -> list[np.ndarray]:
    """In NHWC: ``[n, h*b, w*b, c] -> [n, h, w, (row_offset * b + column_offset) * C + c]``."""
    layout, block = node.attrs["layout"], node.attrs["blocksize"]
    x = to_nhwc(inputs[0], layout)
    n, h, w, c = x.shape
    y = x.reshape(n, h // block, block, w // block, block, c).transpose(0, 1, 3, 2, 4, 5)
    return [np.ascontiguousarray(from_nhwc(y.reshape(n, h // block, w // block, block * block * c),
                                           layout))]


@kernel("Trilu")
def trilu(node: Node, inputs: list) -> list[np.ndarray]:
    x, k = inputs[0], node.attrs["k"]
    return [np.triu(x, k) if node.attrs["upper"] else np.tril(x, k)]
