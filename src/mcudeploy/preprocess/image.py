"""A camera frame -> the model's input tensor, in integer arithmetic: the one implementation
that ``quantize`` / ``validate`` (image folders) use and that the generated ``preprocess.c``
reproduces bit for bit (:mod:`mcudeploy.preprocess.emit`).

Steps, for every output pixel ``(dy, dx)`` of the model's ``H x W`` input:

1. source pixel -> the model's channels, integers 0..255:
   RGB565 ``w = b0 | b1 << 8``: ``r = R5 << 3 | R5 >> 2``, ``g = G6 << 2 | G6 >> 4``,
   ``b = B5 << 3 | B5 >> 2``; YUV422 (YUYV, BT.601 studio range) ``c = Y - 16``, ``d = U - 128``,
   ``e = V - 128``: ``r = clamp((298c + 409e + 128) >> 8)``, ``g = clamp((298c - 100d - 208e + 128) >> 8)``,
   ``b = clamp((298c + 516d + 128) >> 8)`` (``>>`` arithmetic, as gcc / clang define it);
   a 1-channel model takes ``(77r + 150g + 29b + 128) >> 8`` (YUV422: ``Y`` itself);
   BGR reverses the three channels;
2. geometry (tables shared with the C): half-pixel centres in the crop box ``(cx, cy, cw, ch)``:
   nearest ``sx = cx + ((2dx + 1) cw) // (2W)``; bilinear ``s = ((2dx + 1) cw * 2^16) // (2W) - 2^15``
   clamped at 0, ``x0 = cx + s >> 16``, ``x1 = min(x0 + 1, cx + cw - 1)``, ``wx = (s >> 8) & 255``;
   ``v = (p00 (256-wx)(256-wy) + p01 wx (256-wy) + p10 (256-wx) wy + p11 wx wy + 2^15) >> 16``;
3. normalisation and quantization folded into one 256-entry table per channel, computed here
   in float64 once: ``x = (v * scale - mean_c) / std_c + offset``, ``q = clamp(round_half_even(x / s) + z)``
   (a float input keeps ``float32(x)``); the C indexes the same table, so no float runs on the MCU.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import UsageError
from ..ir import Value
from .spec import ImagePreprocess

WEIGHT_ONE = 256


@dataclass(frozen=True)
class InputGeometry:
    """The model input as the preprocessing writes it."""
    height: int
    width: int
    channels: int
    layout: str          # NHWC | NCHW
    dtype: np.dtype


@dataclass(frozen=True)
class Tables:
    """Source columns / rows and weights per output column / row; the per-channel value table."""
    x0: np.ndarray
    x1: np.ndarray
    wx: np.ndarray
    y0: np.ndarray
    y1: np.ndarray
    wy: np.ndarray
    values: np.ndarray   # (channels, 256) in the input's dtype


def input_geometry(value: Value, spec: ImagePreprocess) -> InputGeometry:
    """The image geometry of ``value``; a :class:`UsageError` when ``spec`` cannot feed it."""
    shape = tuple(value.shape)
    if len(shape) != 4 or shape[0] != 1:
        raise UsageError(f"[preprocess]: input {value.name!r} ({value.type_str()}) is not one image "
                         "(rank 4, batch 1); [preprocess] feeds image inputs only")
    layout = getattr(value, "layout", None) or ("NCHW" if shape[1] in (1, 3) and shape[3] not in (1, 3)
                                                else "NHWC")
    height, width, channels = (shape[2], shape[3], shape[1]) if layout == "NCHW" else shape[1:]
    if channels not in (1, 3):
        raise UsageError(f"[preprocess]: input {value.name!r} has {channels} channels ({layout}); "
                         "[preprocess] makes 1 (gray) or 3 (RGB / BGR)")
    for key, values in (("mean", spec.mean), ("std", spec.std)):
        if len(values) not in (1, channels):
            raise UsageError(f"[preprocess] {key} = {list(values)}: give one value or {channels} "
                             f"(the channels of input {value.name!r})")
    if value.dtype.is_integer and value.quant is None:
        raise UsageError(f"[preprocess]: input {value.name!r} is {value.dtype.name} without quantization "
                         "parameters; the preprocessing needs its scale and zero point")
    return InputGeometry(height, width, channels, layout, np.dtype(value.dtype.numpy))


def _axis_tables(start: int, extent: int, count: int, bilinear: bool):
    index = np.arange(count, dtype=np.int64)
    if not bilinear:
        first = start + ((2 * index + 1) * extent) // (2 * count)
        return first, first, np.zeros(count, np.int64)
    position = np.maximum(((2 * index + 1) * extent * 65536) // (2 * count) - 32768, 0)
    first = start + (position >> 16)
    return first, np.minimum(first + 1, start + extent - 1), (position >> 8) & 255


def value_table(value: Value, spec: ImagePreprocess, channels: int) -> np.ndarray:
    """``(channels, 256)``: the model input's value for each pixel value, per channel (step 3)."""
    pixels = np.arange(256, dtype=np.float64)
    mean = np.broadcast_to(np.asarray(spec.mean, np.float64), (channels,))
    std = np.broadcast_to(np.asarray(spec.std, np.float64), (channels,))
    real = (pixels[None, :] * spec.scale - mean[:, None]) / std[:, None] + spec.offset
    if not value.dtype.is_integer:
        return real.astype(value.dtype.numpy)
    assert value.quant is not None   # checked by input_geometry
    scale = float(np.asarray(value.quant.scale).reshape(-1)[0])
    zero_point = int(np.asarray(value.quant.zero_point).reshape(-1)[0])
    info = np.iinfo(value.dtype.numpy)
    table = np.clip(np.round(real / scale) + zero_point, info.min, info.max)
    for channel in range(channels):
        if table[channel].min() == table[channel].max():
            low, high = (info.min - zero_point) * scale, (info.max - zero_point) * scale
            raise UsageError(f"[preprocess]: pixels map to [{real[channel].min():g}, {real[channel].max():g}] "
                             f"on channel {channel}, but input {value.name!r} holds [{low:g}, {high:g}]: every "
                             "pixel becomes one value; fix scale / mean / std / offset")
    return table.astype(value.dtype.numpy)


def build_tables(value: Value, spec: ImagePreprocess) -> tuple[InputGeometry, Tables]:
    geometry = input_geometry(value, spec)
    bilinear = spec.resize == "bilinear"
    x, y, crop_width, crop_height = spec.crop
    x0, x1, wx = _axis_tables(x, crop_width, geometry.width, bilinear)
    y0, y1, wy = _axis_tables(y, crop_height, geometry.height, bilinear)
    return geometry, Tables(x0, x1, wx, y0, y1, wy, value_table(value, spec, geometry.channels))


def frame_channels(frame: np.ndarray, spec: ImagePreprocess, channels: int) -> np.ndarray:
    """``(height, width, channels)`` int64 pixel values 0..255 of a raw frame (step 1)."""
    data = np.frombuffer(np.ascontiguousarray(frame, np.uint8).tobytes(), np.uint8).astype(np.int64)
    if data.size != spec.frame_bytes:
        raise UsageError(f"[preprocess]: a {spec.width} x {spec.height} {spec.format} frame has "
                         f"{spec.frame_bytes} bytes, got {data.size}")
    if spec.format == "gray8":
        gray = data.reshape(spec.height, spec.width, 1)
        return gray if channels == 1 else np.repeat(gray, 3, axis=2)
    if spec.format == "yuv422":
        rgb, luma = _yuv422(data.reshape(spec.height, spec.width // 2, 4) if spec.width % 2 == 0 else None, spec)
        if channels == 1:
            return luma[..., None]
    elif spec.format == "rgb565":
        word = data[0::2] | (data[1::2] << 8)
        red, green, blue = word >> 11, (word >> 5) & 63, word & 31
        rgb = np.stack([red << 3 | red >> 2, green << 2 | green >> 4, blue << 3 | blue >> 2], axis=-1)
        rgb = rgb.reshape(spec.height, spec.width, 3)
    else:
        rgb = data.reshape(spec.height, spec.width, 3)
    if channels == 1:
        return ((77 * rgb[..., 0] + 150 * rgb[..., 1] + 29 * rgb[..., 2] + 128) >> 8)[..., None]
    return rgb[..., ::-1] if spec.channel_order == "BGR" else rgb


def _yuv422(pairs: np.ndarray | None, spec: ImagePreprocess) -> tuple[np.ndarray, np.ndarray]:
    if pairs is None:
        raise UsageError(f"[preprocess] width = {spec.width}: a yuv422 frame has an even width")
    luma = np.stack([pairs[..., 0], pairs[..., 2]], axis=-1).reshape(spec.height, spec.width)
    u = np.repeat(pairs[..., 1], 2, axis=1) - 128
    v = np.repeat(pairs[..., 3], 2, axis=1) - 128
    c = luma - 16
    rgb = np.stack([(298 * c + 409 * v + 128) >> 8, (298 * c - 100 * u - 208 * v + 128) >> 8,
                    (298 * c + 516 * u + 128) >> 8], axis=-1)
    return np.clip(rgb, 0, 255), luma


def preprocess_frame(frame: np.ndarray | bytes, spec: ImagePreprocess, value: Value) -> np.ndarray:
    """The model input (``value.shape``, its dtype) for one raw frame (module docstring)."""
    geometry, tables = build_tables(value, spec)
    pixels = frame_channels(np.frombuffer(bytes(frame), np.uint8) if isinstance(frame, bytes) else frame,
                            spec, geometry.channels)
    rows0, rows1 = tables.y0[:, None], tables.y1[:, None]
    p00, p01 = pixels[rows0, tables.x0[None, :]], pixels[rows0, tables.x1[None, :]]
    p10, p11 = pixels[rows1, tables.x0[None, :]], pixels[rows1, tables.x1[None, :]]
    wx, wy = tables.wx[None, :, None], tables.wy[:, None, None]
    interpolated = (p00 * (WEIGHT_ONE - wx) * (WEIGHT_ONE - wy) + p01 * wx * (WEIGHT_ONE - wy)
                    + p10 * (WEIGHT_ONE - wx) * wy + p11 * wx * wy + 32768) >> 16
    image = np.stack([tables.values[c][interpolated[..., c]] for c in range(geometry.channels)], axis=-1)
    if geometry.layout == "NCHW":
        image = image.transpose(2, 0, 1)
    return image.reshape(value.shape).astype(geometry.dtype)
