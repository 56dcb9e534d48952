"""Data movement that repeats or rearranges elements: Tile, Expand, SpaceToDepth, Trilu.
Shape operands (repeats, shape, k) are static attributes. Zero MACC."""
from __future__ import annotations

from ..registry import Attr, TensorType, op
from ._common import LAYOUT_ATTR, broadcast, channel_axis, need_rank, same_type, spatial_axes


@op("Tile", "shape", inputs=("X",), attrs={"repeats": Attr("ints")})
def tile(inputs, attrs):
    """``Y = X`` repeated ``repeats[i]`` times along axis i (numpy ``tile``; ONNX Tile,
    TFLite TILE): ``Y[p] = X[p mod X.shape]``. Quantized: raw integers are copied."""
    x, repeats = inputs[0], attrs["repeats"]
    if len(repeats) != x.rank or any(r <= 0 for r in repeats):
        raise ValueError(f"repeats {list(repeats)} must give {x.rank} positive counts")
    return [TensorType(x.dtype, tuple(d * r for d, r in zip(x.shape, repeats)))]


@op("Expand", "shape", inputs=("X",), attrs={"shape": Attr("ints")})
def expand(inputs, attrs):
    """``Y = X`` broadcast with a tensor of ``shape`` (numpy broadcasting both ways, so the
    result may be larger than ``shape``; ONNX Expand, TFLite BROADCAST_TO)."""
    x = inputs[0]
    return [TensorType(x.dtype, broadcast(x.shape, attrs["shape"]))]


@op("SpaceToDepth", "shape", inputs=("X",),
    attrs={"blocksize": Attr("int"), "layout": LAYOUT_ATTR})
def space_to_depth(inputs, attrs):
    """Move ``blocksize x blocksize`` spatial blocks into channels (the inverse of
    DepthToSpace in ``DCR`` mode): the new channel is ``(row_offset * b + column_offset) *
    C + c``."""
    x, block = inputs[0], attrs["blocksize"]
    need_rank(x, 4, "SpaceToDepth input X")
    shape = list(x.shape)
    for axis in spatial_axes(attrs["layout"]):
        if block <= 0 or shape[axis] % block:
            raise ValueError(f"{x.type_str()} is not divisible into {block}x{block} blocks")
        shape[axis] //= block
    shape[channel_axis(attrs["layout"])] *= block * block
    return [TensorType(x.dtype, tuple(shape))]


def need_rank_at_least(value, rank: int) -> None:
    if value.rank < rank:
        raise ValueError(f"{value.type_str()} must have rank >= {rank}")


@op("Trilu", "shape", inputs=("X",), attrs={"upper": Attr("int", 1, (0, 1)), "k": Attr("int", 0)})
def trilu(inputs, attrs):
    """Keep the upper (``upper=1``: column - row >= k) or lower (column - row <= k)
    triangle of the last two axes, zero elsewhere."""
    need_rank_at_least(inputs[0], 2)
    return same_type(inputs)
