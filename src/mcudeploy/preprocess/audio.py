"""A 16-bit PCM clip -> a log-mel spectrogram input, in integer arithmetic: the one
implementation the generated ``preprocess.c`` reproduces bit for bit (the tables below are
computed here once, in float64, and written into the C as constants).

Per frame ``f`` (``frame_length`` samples every ``frame_step``, zero-padded to ``N = fft_size``):

1. window: ``x[n] = (pcm[n] * hann[n] + 2^8) >> 9`` (6 fraction bits kept for the FFT's rounding), ``hann`` the periodic Hann window in Q15 (clamped to 32767);
2. FFT: radix-2 decimation in time on int32, bit-reversed input, Q15 twiddles
   ``w = round(2^15 (cos, -sin)(2 pi k / N))`` (clamped to 32767); every butterfly
   ``t = (b * w + 2^14) >> 15`` (complex, int64 products), ``a' = (a + t) >> 1``, ``b' = (a - t) >> 1``
   (the output is the DFT / N); ``>>`` is arithmetic, as gcc / clang define it;
3. power ``p[k] = (re^2 + im^2) >> 12`` (the 6 fraction bits removed) for ``k = 0 .. N/2``; mel energy ``E[m] = (sum_k p[k] W[m, k]) >> 15``,
   ``W`` triangular HTK-mel filters (``mel = 2595 log10(1 + hz / 700)``) in Q15;
4. log: ``L = log2(E + 1)`` in Q16 = ``msb << 16 + LOG2[next 8 bits]`` (a 256-entry Q16 table);
5. the input value ``x = ln(E + 1) * scale + offset = L * (ln 2 / 2^16) * scale + offset``, quantized
   in integers ``q = clamp((L * M + B + 2^(S-1)) >> S)`` with ``M / 2^S = ln 2 scale / (2^16 s)``,
   ``B / 2^S = offset / s + z`` (a float32 input: ``float32(L) * float32(A) + float32(offset)``).

Frames fill the input row-major: ``frames x mel_bins`` elements, whatever the input's shape.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import UsageError
from ..ir import Value
from .spec import AudioPreprocess

Q15 = 1 << 15


@dataclass(frozen=True)
class AudioTables:
    mel_bins: int
    window: np.ndarray        # (frame_length,) Q15
    twiddle_re: np.ndarray    # (N/2,) Q15
    twiddle_im: np.ndarray
    bit_reverse: np.ndarray   # (N,)
    mel_start: np.ndarray     # (mel_bins,) first FFT bin of each filter
    mel_count: np.ndarray     # (mel_bins,) bins of each filter
    mel_weights: np.ndarray   # concatenated Q15 weights
    log2_table: np.ndarray    # (256,) Q16
    multiplier: int           # integer inputs: M, S, B (module docstring step 5)
    shift: int
    bias: int
    float_scale: np.float32   # float inputs: A
    dtype: np.dtype


def _mel(hz):
    return 2595.0 * np.log10(1.0 + np.asarray(hz, np.float64) / 700.0)


def _filters(spec: AudioPreprocess, mel_bins: int):
    bins = spec.fft_size // 2 + 1
    frequencies = np.arange(bins) * spec.sample_rate / spec.fft_size
    edges = np.linspace(_mel(spec.lower_hz), _mel(spec.upper_hz), mel_bins + 2)
    mels = _mel(frequencies)
    starts, counts, weights = [], [], []
    for band in range(mel_bins):
        left, centre, right = edges[band:band + 3]
        rising, falling = (mels - left) / (centre - left), (right - mels) / (right - centre)
        weight = np.round(Q15 * np.clip(np.minimum(rising, falling), 0, None)).astype(np.int64)
        used = np.flatnonzero(weight)
        if used.size == 0:
            raise UsageError(f"[preprocess] mel_bins = {mel_bins}: mel band {band} holds no FFT bin between "
                             f"{spec.lower_hz:g} and {spec.upper_hz:g} Hz; use fewer mel_bins or a larger fft_size")
        starts.append(used[0])
        counts.append(used[-1] - used[0] + 1)
        weights.append(weight[used[0]:used[-1] + 1])
    return np.array(starts), np.array(counts), np.concatenate(weights)


def _requantize(spec: AudioPreprocess, value: Value) -> tuple[int, int, int]:
    assert value.quant is not None   # checked by audio_tables
    scale = float(np.asarray(value.quant.scale).reshape(-1)[0])
    zero_point = int(np.asarray(value.quant.zero_point).reshape(-1)[0])
    slope = math.log(2.0) * spec.scale / (65536.0 * scale)
    intercept = spec.offset / scale + zero_point
    if slope <= 0:
        raise UsageError(f"[preprocess] scale = {spec.scale:g}: give a positive scale")
    shift = min(30 - math.floor(math.log2(slope)), 61 - math.ceil(math.log2(abs(intercept) + 2)))
    return round(slope * 2 ** shift), shift, round(intercept * 2 ** shift)


def audio_tables(spec: AudioPreprocess, value: Value) -> AudioTables:
    count = int(np.prod(value.shape))
    mel_bins = spec.mel_bins or int(value.shape[-1] if value.shape[-1] > 1 else value.shape[-2])
    if count != spec.frames * mel_bins:
        raise UsageError(f"[preprocess]: {spec.frames} frames x {mel_bins} mel bins = {spec.frames * mel_bins} "
                         f"values, but input {value.name!r} ({value.type_str()}) holds {count}; fix samples / "
                         "frame_length / frame_step / mel_bins")
    if value.dtype.is_integer and value.quant is None:
        raise UsageError(f"[preprocess]: input {value.name!r} has no quantization parameters")
    n, size = np.arange(spec.frame_length), spec.fft_size
    window = np.minimum(np.round(Q15 * (0.5 - 0.5 * np.cos(2 * np.pi * n / spec.frame_length))), Q15 - 1).astype(np.int64)
    k = np.arange(size // 2)
    twiddle_re = np.minimum(np.round(Q15 * np.cos(2 * np.pi * k / size)), Q15 - 1).astype(np.int64)
    twiddle_im = np.minimum(np.round(-Q15 * np.sin(2 * np.pi * k / size)), Q15 - 1).astype(np.int64)
    bits = size.bit_length() - 1
    reverse = np.array([int(format(i, f"0{bits}b")[::-1], 2) for i in range(size)])
    log2_table = np.round(65536 * np.log2(1 + np.arange(256) / 256)).astype(np.int64)
    multiplier, shift, bias = _requantize(spec, value) if value.dtype.is_integer else (0, 0, 0)
    mel_start, mel_count, mel_weights = _filters(spec, mel_bins)
    return AudioTables(mel_bins, window, twiddle_re, twiddle_im, reverse, mel_start, mel_count, mel_weights,
                       log2_table, multiplier, shift, bias, np.float32(math.log(2.0) * spec.scale / 65536.0),
                       np.dtype(value.dtype.numpy))


def _fft(real: np.ndarray, imag: np.ndarray, tables: AudioTables) -> tuple[np.ndarray, np.ndarray]:
    """Step 2 on ``(frames, N)`` int64 arrays (already bit-reversed)."""
    frames, size = real.shape
    span = 2
    while span <= size:
        half = span // 2
        w_re = tables.twiddle_re[np.arange(half) * (size // span)]
        w_im = tables.twiddle_im[np.arange(half) * (size // span)]
        re, im = real.reshape(frames, -1, span), imag.reshape(frames, -1, span)
        a_re, a_im, b_re, b_im = re[..., :half], im[..., :half], re[..., half:], im[..., half:]
        t_re = (b_re * w_re - b_im * w_im + (1 << 14)) >> 15
        t_im = (b_re * w_im + b_im * w_re + (1 << 14)) >> 15
        real = np.concatenate([(a_re + t_re) >> 1, (a_re - t_re) >> 1], axis=-1).reshape(frames, size)
        imag = np.concatenate([(a_im + t_im) >> 1, (a_im - t_im) >> 1], axis=-1).reshape(frames, size)
        span *= 2
    return real, imag


def _log2_q16(energy: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Step 4 for positive int64 values."""
    msb = np.zeros_like(energy)
    rest = energy.copy()
    for step in (32, 16, 8, 4, 2, 1):
        high = (rest >> step) > 0
        msb += np.where(high, step, 0)
        rest = np.where(high, rest >> step, rest)
    top = np.where(msb >= 8, energy >> np.maximum(msb - 8, 0), energy << np.maximum(8 - msb, 0)) & 255
    return (msb << 16) + table[top]


def preprocess_clip(clip: np.ndarray | bytes, spec: AudioPreprocess, value: Value) -> np.ndarray:
    """The model input for one clip (int16 samples, or their little-endian bytes)."""
    tables = audio_tables(spec, value)
    pcm = np.frombuffer(clip, "<i2") if isinstance(clip, bytes) else np.asarray(clip)
    if pcm.size != spec.samples:
        raise UsageError(f"[preprocess]: a clip has samples = {spec.samples}, got {pcm.size}")
    pcm = pcm.astype(np.int64)
    starts = np.arange(spec.frames) * spec.frame_step
    framed = pcm[starts[:, None] + np.arange(spec.frame_length)[None, :]]
    padded = np.zeros((spec.frames, spec.fft_size), np.int64)
    padded[:, :spec.frame_length] = (framed * tables.window + (1 << 8)) >> 9
    real, imag = _fft(padded[:, tables.bit_reverse], np.zeros_like(padded), tables)
    power = (real[:, :spec.fft_size // 2 + 1] ** 2 + imag[:, :spec.fft_size // 2 + 1] ** 2) >> 12
    energy = np.empty((spec.frames, tables.mel_bins), np.int64)
    offset = 0
    for band in range(tables.mel_bins):
        start, count = int(tables.mel_start[band]), int(tables.mel_count[band])
        energy[:, band] = (power[:, start:start + count] * tables.mel_weights[offset:offset + count]).sum(1) >> 15
        offset += count
    logs = _log2_q16(energy + 1, tables.log2_table)
    if tables.dtype.kind == "f":
        out = logs.astype(np.float32) * tables.float_scale + np.float32(spec.offset)
    else:
        info = np.iinfo(tables.dtype)
        out = np.clip((logs * tables.multiplier + tables.bias + (1 << (tables.shift - 1))) >> tables.shift,
                      info.min, info.max)
    return out.reshape(value.shape).astype(tables.dtype)


def read_wav(path, spec: AudioPreprocess) -> np.ndarray:
    """The int16 samples of a 16-bit mono WAV file at the spec's sample rate: the first
    ``samples`` of them, zero-padded when the file is shorter; anything else is a DataError."""
    import wave

    from ..errors import DataError
    try:
        with wave.open(str(path), "rb") as handle:
            channels, width, rate = handle.getnchannels(), handle.getsampwidth(), handle.getframerate()
            frames = handle.readframes(min(handle.getnframes(), spec.samples))
    except (OSError, EOFError, wave.Error) as err:
        raise DataError(f"{path}: cannot read this WAV file ({err})") from None
    if (channels, width, rate) != (1, 2, spec.sample_rate):
        raise DataError(f"{path}: {channels} channel(s), {8 * width}-bit, {rate} Hz; [preprocess] takes "
                        f"16-bit mono at sample_rate = {spec.sample_rate}: convert it (sox in.wav -r "
                        f"{spec.sample_rate} -c 1 -b 16 out.wav)")
    samples = np.zeros(spec.samples, np.int16)
    data = np.frombuffer(frames, "<i2")
    samples[:data.size] = data
    return samples
