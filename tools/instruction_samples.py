"""Synthetic layers for the instruction-model fit: seeded, varied shapes per kernel family.

``sample_batches(seed)`` -> a list of :class:`~layer_graphs.LayerBatch` graphs, each a set of
independent single layers small enough that one QEMU run measures all of them. The shapes are
drawn at random (``numpy.random.default_rng(seed)``) over the ranges the shared models use
(channels 1-256, feature maps 1-48 pixels a side, kernels 1x1 to 7x7 and 10x4, strides 1-2,
SAME and VALID padding), never copied from a real model: the real models are the test set.
"""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from layer_graphs import LayerBatch

MAX_MACS = 600_000          # ~8M reference instructions: one layer runs in well under a second
LAYERS_PER_BATCH = 30
CHANNELS = (1, 2, 3, 4, 5, 8, 12, 16, 24, 32, 48, 64, 96, 128, 256)
KERNELS = ((1, 1), (3, 3), (3, 3), (5, 5), (7, 7), (1, 3), (3, 1), (10, 4), (2, 2), (1, 5))


def _pick(rng, values):
    return values[int(rng.integers(len(values)))]


def _conv(batch: LayerBatch, rng, depthwise: bool) -> None:
    for _ in range(200):
        kernel = _pick(rng, KERNELS)
        stride = (int(rng.integers(1, 3)),) * 2
        h, w = int(rng.integers(max(1, kernel[0] - 1), 41)), int(rng.integers(max(1, kernel[1] - 1), 41))
        pad = "same" if rng.random() < 0.7 else "valid"
        if pad == "valid" and (h < kernel[0] or w < kernel[1]):
            continue
        c = _pick(rng, CHANNELS)
        o = c * int(rng.integers(1, 3)) if depthwise and rng.random() < 0.2 else (c if depthwise else _pick(rng, CHANNELS))
        group = c if depthwise else 1
        out_h, out_w = (math.ceil(h / stride[0]), math.ceil(w / stride[1])) if pad == "same" else \
            ((h - kernel[0]) // stride[0] + 1, (w - kernel[1]) // stride[1] + 1)
        macs = out_h * out_w * o * kernel[0] * kernel[1] * (c // group)
        if depthwise and c == 1:
            continue
        if macs <= MAX_MACS:
            batch.conv(h, w, c, o, kernel, stride, pad, group=group, relu=bool(rng.random() < 0.5))
            return


def _fully_connected(batch: LayerBatch, rng) -> None:
    depth = int(rng.choice([1, 2, 3, 8, 10, 16, 33, 64, 100, 128, 256, 400, 640, 1024]))
    units = int(rng.choice([1, 2, 3, 8, 10, 12, 16, 32, 64, 128, 256]))
    rows = 1 if rng.random() < 0.8 else int(rng.integers(2, 5))
    if rows * units * depth <= MAX_MACS:
        batch.fully_connected(depth, units, rows)


def _shape(rng, max_elements=20000) -> tuple[int, int, int, int]:
    while True:
        shape = (1, int(rng.integers(1, 33)), int(rng.integers(1, 33)), _pick(rng, CHANNELS))
        if math.prod(shape) <= max_elements:
            return shape


def _elementwise(batch: LayerBatch, rng, op: str = "Add") -> None:
    shape = _shape(rng)
    if op in ("Add", "Sub", "Mul"):
        other = shape if rng.random() < 0.75 else (1, 1, 1, shape[3])
        batch.binary(op, shape, other)
    elif op in ("AveragePool", "MaxPool"):
        k = _pick(rng, ((2, 2), (3, 3), (2, 2), (shape[1], shape[2])))
        s = k if rng.random() < 0.6 else (1, 1)
        if shape[1] >= k[0] and shape[2] >= k[1]:
            batch.pool(op, shape[1], shape[2], shape[3], k, s, "valid" if rng.random() < 0.6 else "same")
    elif op == "Softmax":
        rows, depth = int(rng.integers(1, 4)), int(rng.integers(2, 1001))
        batch.softmax(rows, depth, (0.05, 0.1, 0.2, 0.4)[depth % 4])   # varied diff_min: exps skipped
    elif op == "Reshape":
        batch.reshape(shape, (1, math.prod(shape)))
    elif op == "Concat":
        parts = [(1, shape[1], shape[2], _pick(rng, CHANNELS)) for _ in range(int(rng.integers(2, 4)))]
        batch.concat(parts, axis=3)
    elif op == "ReduceMean":
        batch.mean(shape[1], shape[2], shape[3])
    elif op in ("Sigmoid", "Tanh"):
        scale, zero = (1 / 256, -128) if op == "Sigmoid" else (1 / 128, 0)
        batch.unary(op, shape, scale=scale, zero_point=zero)
    elif op == "LeakyRelu":
        batch.unary(op, shape, {"alpha": 0.1})
    elif op == "HardSwish":
        batch.unary(op, shape)


FAMILY_SAMPLERS = [
    (lambda b, r: _conv(b, r, False), 110), (lambda b, r: _conv(b, r, True), 70),
    (_fully_connected, 50),
    *[(partial(_elementwise, op=op), count) for op, count in (
        ("Add", 24), ("Sub", 8), ("Mul", 12), ("AveragePool", 20), ("MaxPool", 16), ("Softmax", 16),
        ("Reshape", 12), ("Concat", 12), ("ReduceMean", 12), ("Sigmoid", 8), ("Tanh", 8),
        ("LeakyRelu", 8), ("HardSwish", 8))],
]


def sample_batches(seed: int = 2026, samplers=None, prefix: str = "fit", weight_scales=(0.002, 0.02),
                   huge_bias_share: float = 0.0) -> list:
    """The synthetic layers, in batches of at most LAYERS_PER_BATCH (module docstring)."""
    rng = np.random.default_rng(seed)
    draws = [sampler for sampler, count in (samplers or FAMILY_SAMPLERS) for _ in range(count)]
    order = rng.permutation(len(draws))
    batches, batch, size = [], None, LAYERS_PER_BATCH
    for index in order:
        if batch is None or len(batch.outputs) >= size:
            size = int(rng.integers(4, LAYERS_PER_BATCH + 1))   # varied: the per-layer overhead is fitted
            batch = LayerBatch(f"{prefix}{len(batches)}", seed=int(rng.integers(1 << 30)), weight_scales=weight_scales,
                               huge_bias_share=huge_bias_share)
            batches.append(batch)
        draws[index](batch, rng)
    return [b for b in batches if b.outputs]


# Coverage of kernel paths the main draw never takes: requantization with shifts >= 0 (large
# weight scales: the optimised variants' general output path), biases near 2^30 (the DSP
# variants' 64-bit "wide" channels), and, on a core with both
# extensions, the DSP variants that run where a Helium variant refuses a node (its scratch).
WIDE_SAMPLERS = [(lambda b, r: _conv(b, r, False), 16), (lambda b, r: _conv(b, r, True), 16), (_fully_connected, 10)]
DSP_ON_HELIUM_SAMPLERS = [(lambda b, r: _conv(b, r, True), 40), (_fully_connected, 20),
                          (partial(_elementwise, op="AveragePool"), 12)]


def _head(batch: LayerBatch, rng) -> None:
    """A convolution over a map of 1-3 pixels a side (classifier heads, the last layers of a
    network): a single pixel or an odd last pixel dominates, and channel counts of any tail."""
    h, w = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    c, o = _pick(rng, CHANNELS), _pick(rng, CHANNELS + (2, 3, 6, 10, 12))
    kernel = (1, 1) if rng.random() < 0.7 else (h, w)
    batch.conv(h, w, c, o, kernel, 1, "valid", relu=bool(rng.random() < 0.5))


HEAD_SAMPLERS = [(_head, 40), (_fully_connected, 8)]


def _fully_connected_blocks(batch: LayerBatch, rng) -> None:
    """Fully connected layers over every remainder of the DSP kernel's 4-unit blocks and of
    its 4-byte groups (units and depth mod 4 = 0..3)."""
    depth = int(rng.choice([1, 3, 4, 7, 16, 30, 64, 129, 256, 400, 640]))
    units = int(rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 13, 32, 64, 126, 128]))
    rows = 1 if rng.random() < 0.8 else int(rng.integers(2, 4))
    if rows * units * depth <= MAX_MACS:
        batch.fully_connected(depth, units, rows)


FC_BLOCK_SAMPLERS = [(_fully_connected_blocks, 40)]


def _depthwise_paths(batch: LayerBatch, rng) -> None:
    """Depthwise layers of the Helium kernel's less common paths: 1-D ones (W = 1, kernels
    k x 1 up to 15 rows: a single pixel per band row), and the pixel path (dilation 2, or
    many channels on a small map: the band above the scratch budget)."""
    c = _pick(rng, (8, 12, 16, 24, 32, 40, 64, 96, 128, 256))
    kind = int(rng.integers(3))
    if kind == 0:
        k = int(rng.integers(2, 16))
        h = int(rng.integers(k, 41))
        batch.conv(h, 1, c, c, (k, 1), 1, "valid" if rng.random() < 0.6 else "same", group=c)
    elif kind == 1:
        h, w = int(rng.integers(3, 17)), int(rng.integers(3, 17))
        batch.conv(h, w, c, c, (3, 3), 1, "same", group=c, dilation=(2, 2), relu=bool(rng.random() < 0.5))
    else:
        k = _pick(rng, ((3, 3), (5, 5), (15, 1), (7, 1)))
        h, w = k[0] + int(rng.integers(0, 3)), k[1] + int(rng.integers(0, 3))
        batch.conv(h, w, c, c, k, 1, "valid", group=c)


DEPTHWISE_PATH_SAMPLERS = [(_depthwise_paths, 48)]


def _depthwise_narrow(batch: LayerBatch, rng) -> None:
    """3x3 depthwise layers on narrow maps (W 2..8, as DS-CNN's 25 x 5): most pixels are
    border pixels and the per-row costs weigh (the DSP kernel's border and row paths)."""
    c = _pick(rng, (8, 16, 24, 32, 64, 96, 128))
    h, w = int(rng.integers(3, 31)), int(rng.integers(2, 9))
    stride = 1 if rng.random() < 0.7 else 2
    batch.conv(h, w, c, c, (3, 3), stride, "same", group=c, relu=bool(rng.random() < 0.5))


DEPTHWISE_NARROW_SAMPLERS = [(_depthwise_narrow, 40)]


def _moves(batch: LayerBatch, rng) -> None:
    """The data movers a tiled U-Net runs per tile: a Slice of rows (and columns / channels)
    of a larger tensor, and a nearest up-sampling by 2 (or another whole factor)."""
    shape = _shape(rng, 40000)
    if rng.random() < 0.55:
        h, w, c = shape[1], shape[2], shape[3]
        begin_h, begin_w = int(rng.integers(0, h)), int(rng.integers(0, w)) if rng.random() < 0.3 else 0
        end_c = c if rng.random() < 0.8 else max(1, c // 2)
        batch.slice(shape, (begin_h, begin_w, 0), (h, w, end_c), (1, 2, 3), (1, 1, 1))
    else:
        factor = _pick(rng, (2, 2, 2, 3))
        small = (1, max(1, shape[1] // factor), max(1, shape[2] // factor), shape[3])
        batch.resize(small, (small[1] * factor, small[2] * factor))


MOVE_SAMPLERS = [(_moves, 40)]


def coverage_batches(seed: int = 2027) -> list:
    """Layers with some channels' requantization shifts >= 0, layers with some biases near
    2^30 (the "wide" channels of trained models), convolutions on maps of 1-3 pixels a
    side, fully connected layers over every 4-unit block remainder, the Helium
    depthwise's 1-D and pixel paths, 3x3 depthwise layers on narrow maps, and the Slices and
    nearest up-samplings of a tiled U-Net, for every preference."""
    return sample_batches(seed, WIDE_SAMPLERS, "wide", (0.3, 2.0)) + \
        sample_batches(seed + 10, WIDE_SAMPLERS, "bias", huge_bias_share=0.5) + \
        sample_batches(seed + 20, HEAD_SAMPLERS, "head") + sample_batches(seed + 30, FC_BLOCK_SAMPLERS, "fcq") + \
        sample_batches(seed + 40, DEPTHWISE_PATH_SAMPLERS, "dwpath") + \
        sample_batches(seed + 50, DEPTHWISE_NARROW_SAMPLERS, "dwnarrow") + \
        sample_batches(seed + 60, MOVE_SAMPLERS, "moves")


def dsp_on_helium_batches(seed: int = 2028) -> list:
    """Depthwise, fully connected and average pooling layers for the DSP variants on a Helium core
(and the fully connected block remainders)."""
    return sample_batches(seed, DSP_ON_HELIUM_SAMPLERS, "dsp") + sample_batches(seed + 30, FC_BLOCK_SAMPLERS, "dspfcq")
