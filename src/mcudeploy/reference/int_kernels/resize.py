"""Integer Resize of NHWC height / width, TFLite semantics (RESIZE_NEAREST_NEIGHBOR,
RESIZE_BILINEAR); input and output share their quantization.

Nearest (float32 as TFLite): ``scale = in / out`` (``(in-1)/(out-1)`` with align_corners),
``src = min(align_corners ? roundf(o * scale) : floor((o + offset) * scale), in - 1)``
with ``offset = 0.5`` for half-pixel centres (then ``max(src, 0)``).

Bilinear (``ResizeBilinearInteger``, 10 fractional bits)::

    scale10 = (2^10 * in + out / 2) / out          (align_corners: (2^10 (in-1) + (out-1)/2) / (out-1))
    v       = o * scale10 (+ scale10 / 2 - 2^9 with half-pixel centres)
    lo      = max(trunc(v / 2^10), 0),  hi = min(trunc((v + 2^10 - 1) / 2^10), in - 1)
    out20   = sum of the four neighbours times (2^10 - fy | fy) * (2^10 - fx | fx),  f = v - 2^10 lo
    Y       = trunc((out20 + sign(out20) * 2^19) / 2^20)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...arithmetic import fixed_point as fp
from ...errors import UnsupportedError
from ...ir import Node
from ._common import per_tensor, where
from .registry import int_kernel

NEAREST_MODES = {"asymmetric": (False, False), "tf_half_pixel_for_nn": (False, True),
                 "align_corners": (True, False)}
BILINEAR_MODES = {"asymmetric": (False, False), "half_pixel": (False, True),
                  "align_corners": (True, False)}


@dataclass(frozen=True)
class ResizeParams:
    align_corners: bool
    half_pixel_centers: bool


def prepare_resize(node: Node) -> ResizeParams:
    x, out = node.inputs[0], node.outputs[0]
    mode, coordinates = node.attrs["mode"], node.attrs["coordinate_transformation_mode"]
    table = NEAREST_MODES if mode == "nearest" else BILINEAR_MODES
    if x.rank != 4 or x.shape[0] != out.shape[0] or x.shape[3] != out.shape[3] \
            or coordinates not in table:
        raise UnsupportedError(f"{where(node)}: the integer Resize follows TFLite: NHWC height / "
                               f"width only, {mode} with coordinate mode {', '.join(table)}; got "
                               f"{coordinates} resizing {x.type_str()} to {out.type_str()}")
    if per_tensor(node, x, "input") != per_tensor(node, out, "output"):
        raise UnsupportedError(f"{where(node)}: input and output quantization differ; TFLite "
                               "Resize does not rescale")
    return ResizeParams(*table[coordinates])


def nearest_indices(in_size: int, out_size: int, params: ResizeParams) -> np.ndarray:
    """TFLite ``GetNearestNeighbor`` for every output index, in float32."""
    if params.align_corners and out_size > 1:
        scale = np.float32(in_size - 1) / np.float32(out_size - 1)
    else:
        scale = np.float32(in_size) / np.float32(out_size)
    offset = np.float32(0.5 if params.half_pixel_centers else 0.0)
    position = (np.arange(out_size, dtype=np.float32) + offset) * scale
    index = fp.round_half_away(position) if params.align_corners else np.floor(position)
    index = np.minimum(index.astype(np.int64), in_size - 1)
    return np.maximum(index, 0) if params.half_pixel_centers else index


def bilinear_weights(in_size: int, out_size: int, params: ResizeParams):
    """``(lower, upper, fraction)`` per output index, fraction in units of 2^-10."""
    if params.align_corners and out_size > 1:
        scale = ((1 << 10) * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    else:
        scale = ((1 << 10) * in_size + out_size // 2) // out_size
    value = np.arange(out_size, dtype=np.int64) * scale
    if params.half_pixel_centers:
        value = value + scale // 2 - (1 << 9)
    lower = np.maximum(fp.truncating_divide(value, 1 << 10), 0)
    upper = np.minimum(fp.truncating_divide(value + (1 << 10) - 1, 1 << 10), in_size - 1)
    return lower, upper, value - (1 << 10) * lower


@int_kernel("Resize", prepare=prepare_resize)
def resize(node: Node, params: ResizeParams, inputs: list) -> list[np.ndarray]:
    x = inputs[0]
    (in_h, in_w), (out_h, out_w) = x.shape[2:4], node.outputs[0].shape[1:3]
    if node.attrs["mode"] == "nearest":
        rows, cols = nearest_indices(in_h, out_h, params), nearest_indices(in_w, out_w, params)
        return [x[:, :, rows][:, :, :, cols]]
    y0, y1, fy = bilinear_weights(in_h, out_h, params)
    x0, x1, fx = bilinear_weights(in_w, out_w, params)
    wide = x.astype(np.int64)
    fy, fx = fy[:, None, None], fx[None, :, None]
    one = 1 << 10
    total = (wide[:, :, y0][:, :, :, x0] * (one - fy) * (one - fx)
             + wide[:, :, y1][:, :, :, x0] * fy * (one - fx)
             + wide[:, :, y0][:, :, :, x1] * (one - fy) * fx
             + wide[:, :, y1][:, :, :, x1] * fy * fx)
    rounded = fp.truncating_divide(total + np.where(total > 0, 1 << 19, -(1 << 19)), 1 << 20)
    return [rounded.astype(x.dtype)]
