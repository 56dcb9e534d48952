"""The ``[preprocess]`` table of a project file or ``--config``: how a camera frame becomes the
model's (quantized) input, checked against that input.

Keys (every one optional except ``format``, ``width`` and ``height``)::

    [preprocess]
    format = "rgb565"        # rgb888 (R, G, B bytes), rgb565 (16-bit little-endian words),
                             # gray8, yuv422 (YUYV: Y0 U Y1 V per two pixels)
    width = 320              # the source frame
    height = 240
    crop = [40, 0, 240, 240] # x, y, width, height inside the frame (default: the whole frame)
    resize = "bilinear"      # nearest | bilinear, to the model input's height x width
    channel_order = "RGB"    # RGB | BGR, the channel order the model takes
    scale = 0.00392156862745 # x = (pixel * scale - mean) / std + offset, per channel
    mean = [0.485, 0.456, 0.406]
    std = [0.229, 0.224, 0.225]
    offset = 0.0

Audio (``kind = "audio"``): a 16-bit mono PCM clip -> a log-mel spectrogram
(:mod:`mcudeploy.preprocess.audio`)::

    [preprocess]
    kind = "audio"
    sample_rate = 16000
    samples = 16000          # the clip: 1 s
    frame_length = 640       # 40 ms Hann window
    frame_step = 320         # 20 ms: 1 + (16000 - 640) // 320 = 49 frames
    fft_size = 1024          # a power of two >= frame_length (default: the smallest)
    mel_bins = 10            # default: the model input's last dimension
    lower_hz = 20.0
    upper_hz = 4000.0
    scale = 1.0              # x = ln(mel_energy + 1) * scale + offset
    offset = 0.0

The model input must be an image tensor (rank 4, NHWC or NCHW) with 1 or 3 channels; a
mismatch (channels, a crop outside the frame, ``std = 0``, a float range that the input's
quantization clips entirely) is a :class:`~mcudeploy.errors.UsageError` naming the key.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError, did_you_mean
from ..text_inputs import read_toml

FORMATS = {"rgb888": 3, "rgb565": 2, "gray8": 1, "yuv422": 2}   # bytes per pixel
RESIZE_METHODS = ("nearest", "bilinear")
CHANNEL_ORDERS = ("RGB", "BGR")
MAX_FRAME_SIDE = 8192
PREPROCESS_SECTION = "preprocess"   # of a project file and of a --config file
AUDIO_KEYS = ("kind", "sample_rate", "samples", "frame_length", "frame_step", "fft_size", "mel_bins", "lower_hz",
              "upper_hz", "scale", "offset")
KEYS = ("kind", "format", "width", "height", "crop", "resize", "channel_order", "scale", "mean", "std", "offset")


@dataclass(frozen=True)
class ImagePreprocess:
    format: str
    width: int
    height: int
    crop: tuple[int, int, int, int]          # x, y, width, height
    resize: str = "bilinear"
    channel_order: str = "RGB"
    scale: float = 1.0 / 255.0
    mean: tuple[float, ...] = (0.0,)
    std: tuple[float, ...] = (1.0,)
    offset: float = 0.0

    @property
    def frame_bytes(self) -> int:
        return self.width * self.height * FORMATS[self.format]


@dataclass(frozen=True)
class AudioPreprocess:
    sample_rate: int
    samples: int
    frame_length: int
    frame_step: int
    fft_size: int
    mel_bins: int | None
    lower_hz: float
    upper_hz: float
    scale: float = 1.0
    offset: float = 0.0

    @property
    def frames(self) -> int:
        return 1 + (self.samples - self.frame_length) // self.frame_step

    @property
    def clip_bytes(self) -> int:
        return 2 * self.samples


def _integer(table: dict, key: str, where: str, default: int | None = None, low: int = 1,
             high: int = MAX_FRAME_SIDE) -> int:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UsageError(f"{where} {key} = {value!r}: give a whole number in [{low}, {high}]")
    return value


def _floats(table: dict, key: str, where: str, default: tuple[float, ...]) -> tuple[float, ...]:
    value = table.get(key, list(default))
    values = value if isinstance(value, list) else [value]
    if not values or any(isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or abs(v) == float("inf")
                         for v in values):
        raise UsageError(f"{where} {key} = {value!r}: give a finite number or a list of them")
    return tuple(float(v) for v in values)


def _choice(table: dict, key: str, where: str, choices, default: str | None) -> str:
    value = table.get(key, default)
    if value not in choices:
        raise UsageError(f"{where} {key} = {value!r}: choose one of {', '.join(choices)}"
                         + (did_you_mean(str(value), choices) if isinstance(value, str) else ""))
    return str(value)


def _crop(table: dict, where: str, width: int, height: int) -> tuple[int, int, int, int]:
    value = table.get("crop", [0, 0, width, height])
    if (not isinstance(value, list) or len(value) != 4
            or any(isinstance(v, bool) or not isinstance(v, int) for v in value)):
        raise UsageError(f"{where} crop = {value!r}: give [x, y, width, height] in pixels")
    x, y, crop_width, crop_height = value
    if x < 0 or y < 0 or crop_width < 1 or crop_height < 1 or x + crop_width > width or y + crop_height > height:
        raise UsageError(f"{where} crop = {value!r}: the box must lie inside the {width} x {height} frame")
    return x, y, crop_width, crop_height


def _audio(table: dict, where: str) -> AudioPreprocess:
    for key in table:
        if key not in AUDIO_KEYS:
            raise UsageError(f"{where}: unknown key {key!r} for kind = \"audio\"; known keys are "
                             f"{', '.join(AUDIO_KEYS)}" + did_you_mean(key, AUDIO_KEYS))
    rate = _integer(table, "sample_rate", where, 16000, 1000, 192000)
    samples = _integer(table, "samples", where, rate, 16, 1 << 22)
    length = _integer(table, "frame_length", where, rate // 25, 16, min(samples, 8192))
    step = _integer(table, "frame_step", where, length // 2, 1, 8192)
    fft = _integer(table, "fft_size", where, 1 << (length - 1).bit_length(), length, 8192)
    if fft & (fft - 1):
        raise UsageError(f"{where} fft_size = {fft}: give a power of two >= frame_length ({length})")
    mel = table.get("mel_bins")
    mel = None if mel is None else _integer(table, "mel_bins", where, None, 1, fft // 2)
    lower = _floats(table, "lower_hz", where, (20.0,))[0]
    upper = _floats(table, "upper_hz", where, (rate / 2,))[0]
    if not 0 <= lower < upper <= rate / 2:
        raise UsageError(f"{where} lower_hz = {lower:g}, upper_hz = {upper:g}: need 0 <= lower < upper <= "
                         f"sample_rate / 2 ({rate / 2:g})")
    return AudioPreprocess(rate, samples, length, step, fft, mel, lower, upper,
                           _floats(table, "scale", where, (1.0,))[0], _floats(table, "offset", where, (0.0,))[0])


def parse_preprocess(table: Any, where: str = "[preprocess]") -> ImagePreprocess | AudioPreprocess:
    """The checked spec of a ``[preprocess]`` table (module docstring)."""
    if not isinstance(table, dict):
        raise UsageError(f"{where} must be a table of keys, got {table!r}")
    kind = _choice(table, "kind", where, ("image", "audio"), "image")
    if kind == "audio":
        return _audio(table, where)
    for key in table:
        if key not in KEYS:
            raise UsageError(f"{where}: unknown key {key!r}; known keys are {', '.join(KEYS)}"
                             + did_you_mean(key, KEYS))
    frame_format = _choice(table, "format", where, tuple(FORMATS), None)
    width, height = _integer(table, "width", where), _integer(table, "height", where)
    std = _floats(table, "std", where, (1.0,))
    if any(value == 0.0 for value in std):
        raise UsageError(f"{where} std = {list(std)}: a standard deviation must be non-zero")
    return ImagePreprocess(frame_format, width, height, _crop(table, where, width, height),
                           _choice(table, "resize", where, RESIZE_METHODS, "bilinear"),
                           _choice(table, "channel_order", where, CHANNEL_ORDERS, "RGB"),
                           _floats(table, "scale", where, (1.0 / 255.0,))[0],
                           _floats(table, "mean", where, (0.0,)), std, _floats(table, "offset", where, (0.0,))[0])


def preprocess_from_file(path: str | Path) -> ImagePreprocess | AudioPreprocess | None:
    """The ``[preprocess]`` of a project / ``--config`` TOML file, or None when it has none."""
    document = read_toml(Path(path), "--config")
    if PREPROCESS_SECTION not in document:
        return None
    return parse_preprocess(document[PREPROCESS_SECTION], f"{path}: [{PREPROCESS_SECTION}]")
