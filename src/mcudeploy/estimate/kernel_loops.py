"""Loop counts of the optimised kernel variants (``runtime/src/dsp``, ``runtime/src/mve``).

Input: the shape of a window kernel (or fully connected layer) and the deployment context.
Output: ``{feature: count}``, one count per loop body of the variant's C code, so the
instruction model ``sum_f c_f n_f`` follows the kernel's own control flow (its im2col
branches, the 2-pixel / 2- or 4-channel blocks and their remainders, the 3x3 fast paths,
the channel tails). The counts are exact functions of the shape; the coefficients are
fitted (``tools/fit_instruction_model.py``).

Per axis (:func:`axis_counts`): ``S`` = in-bounds taps summed over output positions,
``F`` = positions whose whole window is inside (``W`` = the same with dilation 1, the
"whole kernel row" test of the im2col copies). With ``P = N H_o W_o`` pixels:

* im2col (``i2c{L}_``, ``L`` = 4 bytes per DSP widen step, 16 per MVE copy): per pixel and
  kernel row a padding row (fill ``ceil(k_w C / L)`` steps), a whole row (copy, the same
  steps) or, near the left / right edges, ``k_w`` taps of ``ceil(C / L)`` steps each:
  ``pad_rows = N W_o (H_o k_h - S_r)``, ``whole_rows = N S_r W_x``,
  ``edge_taps = N S_r (W_o - W_x) k_w``. DSP with ``C mod 4 != 0`` gathers bytes instead
  (``gather_taps = P k_h k_w``, ``gather_bytes = P K``, ``gather_words = P K_p / 4``), in runs
  of ``k_w C`` bytes per kernel row where the window's columns are inside (``gather_run_*``).
* DSP conv blocks of 4 or 3 pixels x 1 channel (``q4_`` / ``q3_``, :func:`quad_counts`) where
  the header's ``MCU_CONV2D_S8_DSP_BLOCK`` picks them (K >= 64, scratch within budget).
* blocked products (``g{c}_``: 2 pixels x ``c`` output channels, ``d`` depth lanes,
  ``K_p = ceil_d(K)``): pixel pairs ``P // 2`` and the odd last pixel, times whole channel
  blocks ``C_o // c`` and the ``C_o mod c`` tail, each with its ``K_p / d`` inner steps.
* depthwise DSP (``dwd_``, 4 channels per word, ``G = C // 4``, tail ``T = C mod 4``): per
  row and group (scales), per pixel and group, the 3x3 fast path for pixels whose window is
  inside (``F_r F_c``), the 3x3 border path for those with the three rows inside and one
  column missing (``F_r B_c``, ``B_c`` = output columns with two of three taps inside), per
  row and group of those rows the interior biases (``F_r G``), in-bounds tap rows / taps for
  the others, and the tail channels.
* depthwise MVE (8 channels per vector, ``G = ceil(C / 8)``, ``t = [C mod 8 != 0]``): the
  band path ``dwb_`` (dilation 1 with the band as scratch): the ring's initial fill, the
  input rows copied into it group by group (each once, :func:`band_fills`), per output row
  the full groups in one call when every shift is <= -1 (``dwb_fast_*``) and the other groups
  one by one, pixel pairs and the odd pixel over their taps; else the pixel path ``dwp_``:
  every pixel, group and tap.
* MVE im2col: an inside window of kernel rows of at most 16 bytes is one predicated copy per
  kernel row (``i2c16_short_*``), one of rows of whole 16-byte steps (``k_w C mod 16 = 0``,
  not pointwise) a DLS/LE copy (``i2c16_window_*``); a pointwise conv copies only its last pixels.
* MVE im2col conv, packed scales (``g4p_``, :func:`packed_pair_counts`): the asm pair loop
  over whole blocks of 4 channels when every shift is <= -1 and ``K_p >= 32``, its rounding
  fix-up only where ``activation_min < output_offset``.
* ``requant_*``: outputs per requantization path (:func:`requant_counts`), decided from the
  prepared shifts, multipliers and biases exactly as the C code decides them.
"""
from __future__ import annotations

import math

import numpy as np


def axis_counts(out_size: int, stride: int, pad: int, dilation: int, kernel: int, size: int) -> tuple[int, int, int]:
    """(S, F, W) of one axis (module docstring)."""
    valid_sum = full = whole = 0
    for position in range(out_size):
        start = position * stride - pad
        valid = sum(1 for tap in range(kernel) if 0 <= start + tap * dilation < size)
        valid_sum += valid
        full += valid == kernel
        whole += dilation == 1 and start >= 0 and start + kernel <= size
    return valid_sum, full, whole


def im2col_counts(shape: dict, lanes: int) -> dict[str, float]:
    """The im2col copy loops of one call (module docstring), prefix ``i2c{lanes}_``."""
    n, out_h, out_w, kernel_h, kernel_w, channels = (shape[k] for k in ("n", "out_h", "out_w", "kernel_h",
                                                                         "kernel_w", "channels"))
    rows_valid, _, _ = shape["rows"]
    _, _, whole_x = shape["cols"]
    pixels = n * out_h * out_w
    pad_rows = n * out_w * (out_h * kernel_h - rows_valid)
    whole_rows = n * rows_valid * whole_x
    edge_taps = n * rows_valid * (out_w - whole_x) * kernel_w
    row_steps = math.ceil(kernel_w * channels / lanes)
    prefix = f"i2c{lanes}_"
    return {prefix + "pixels": pixels, prefix + "rows": pixels * kernel_h, prefix + "pad_rows": pad_rows,
            prefix + "pad_steps": pad_rows * row_steps, prefix + "whole_rows": whole_rows,
            prefix + "whole_steps": whole_rows * row_steps, prefix + "edge_rows": n * rows_valid * (out_w - whole_x),
            prefix + "edge_taps": edge_taps, prefix + "edge_steps": edge_taps * math.ceil(channels / lanes),
            prefix + "depth_fill": pixels * (shape["depth_padded"] > shape["depth"])}


def gather_counts(shape: dict) -> dict[str, float]:
    """The DSP byte-gather im2col (``C mod 4 != 0``): pixels whose window columns are inside
    (dilation 1 along W) copy each kernel row as one run of ``k_w C`` bytes (``gather_run_*``:
    words and the remaining bytes), the others tap by tap; every field is widened."""
    pixels = shape["n"] * shape["out_h"] * shape["out_w"]
    runs = shape["n"] * shape["out_h"] * shape["cols"][2]
    run = shape["kernel_w"] * shape["depth"] // (shape["kernel_h"] * shape["kernel_w"])   # k_w C
    run_rows = runs * shape["kernel_h"]
    return {"gather_pixels": pixels, "gather_taps": (pixels - runs) * shape["kernel_h"] * shape["kernel_w"],
            "gather_bytes": (pixels - runs) * shape["depth"], "gather_words": pixels * shape["depth_padded"] // 4,
            "gather_fill": (pixels - runs) * (shape["depth_padded"] - shape["depth"]),
            "gather_run_pixels": runs, "gather_run_rows": run_rows, "gather_run_words": run_rows * (run // 4),
            "gather_run_bytes": run_rows * (run % 4)}


def blocked_counts(pixels: int, channels: int, depth: int, block_c: int, lanes: int,
                   few: bool = False) -> dict[str, float]:
    """2 pixels x ``block_c`` channels over ``ceil(depth / lanes)`` steps, and their remainders.
    ``few``: a caller that sends fewer than ``block_c`` channels to the remainder block alone
    (``mcu_mve_gemm_few``: the Helium fully connected and pointwise conv), whose calls skip
    the register saves of the blocks (``g4_few_calls`` instead of ``g4_calls``)."""
    steps = math.ceil(depth / lanes)
    pairs, single = pixels // 2, pixels % 2
    blocks, tail = channels // block_c, channels % block_c
    prefix = f"g{block_c}_"
    few_calls = (pairs + single) if few and blocks == 0 else 0
    extra = {prefix + "few_calls": few_calls} if few else {}
    return {**extra, prefix + "calls": pairs + single - few_calls, prefix + "pair_blocks": pairs * blocks,
            prefix + "pair_steps": pairs * blocks * steps, prefix + "single_blocks": single * blocks,
            prefix + "single_steps": single * blocks * steps, prefix + "pair_tails": pairs * (tail > 0),
            prefix + "pair_tail_steps": pairs * tail * steps, prefix + "single_tails": single * (tail > 0),
            prefix + "single_tail_steps": single * tail * steps, prefix + "tail_chunks": (pairs * 2 + single) * steps * (tail > 0),
            prefix + "outputs": pixels * channels}


def two_tap_columns(shape: dict) -> int:
    """Output columns of a 3-wide window (dilation 1) with exactly two taps inside the input."""
    count = 0
    for position in range(shape["out_w"]):
        start = position * shape["stride_w"] - shape["pad_left"]
        count += sum(1 for tap in range(3) if 0 <= start + tap < shape["in_w"]) == 2
    return count


def depthwise_dsp_counts(shape: dict) -> dict[str, float]:
    """``mcu_depthwise_conv2d_s8_dsp``'s loops (module docstring)."""
    n, out_h, out_w, kernel_h, kernel_w, channels = (shape[k] for k in ("n", "out_h", "out_w", "kernel_h",
                                                                         "kernel_w", "channels"))
    rows_valid, rows_full, _ = shape["rows"]
    cols_valid, cols_full, _ = shape["cols"]
    groups, tail = channels // 4, channels % 4
    pixels = n * out_h * out_w
    fast = n * rows_full * cols_full if shape["is_3x3"] else 0
    border = n * rows_full * two_tap_columns(shape) if shape["is_3x3"] else 0
    valid_rows, valid_taps = n * out_w * rows_valid, n * rows_valid * cols_valid
    return {"dwd_rows": n * out_h, "dwd_row_groups": n * out_h * groups, "dwd_pixel_groups": pixels * groups,
            "dwd_fast": fast * groups, "dwd_border": border * groups,
            "dwd_unrolled_row_groups": (n * rows_full * groups) if shape["is_3x3"] else 0,
            "dwd_slow_pixels": (pixels - fast - border) * groups,
            "dwd_slow_rows": (valid_rows - (fast + border) * kernel_h) * groups,
            "dwd_slow_taps": (valid_taps - fast * kernel_h * kernel_w - border * kernel_h * 2) * groups,
            "dwd_tail_rows": n * out_h * tail, "dwd_tail_pixels": pixels * tail,
            "dwd_tail_valid_rows": valid_rows * tail, "dwd_tail_taps": valid_taps * tail}


def depthwise_row_counts(shape: dict) -> dict[str, float]:
    """The DSP depthwise row blocks (3x3, dilation 1, at most one border pixel a side): per
    output row with two or three kernel rows in range one call per group of 4 channels, and per
    pixel the block of its taps in range (``dwr_p{rows}{cols}``)."""
    names = ("dwr_row_calls", "dwr_p33", "dwr_p32", "dwr_p23", "dwr_p22")
    features = dict.fromkeys(names, 0.0)
    groups = shape["channels"] // 4
    if not shape["is_3x3"] or shape["pad_top"] > 1 or shape["pad_left"] > 1:
        return features
    def taps(position: int, stride: int, pad: int, size: int) -> int:
        start = position * stride - pad
        return sum(1 for tap in range(3) if 0 <= start + tap < size)
    rows = [taps(y, shape["stride_h"], shape["pad_top"], shape["in_h"]) for y in range(shape["out_h"])]
    cols = [taps(x, shape["stride_w"], shape["pad_left"], shape["in_w"]) for x in range(shape["out_w"])]
    for row in rows:
        if row < 2:
            continue
        features["dwr_row_calls"] += shape["n"] * groups
        for col in cols:
            if col >= 2:
                features[f"dwr_p{row}{col}"] += shape["n"] * groups
    return features


def depthwise_mve_counts(shape: dict) -> dict[str, float]:
    """``mcu_depthwise_conv2d_s8_mve``'s loops: the band path (``shape["band"]``, the plan gave
    it the band as scratch; ``shape["passes"]`` passes over group chunks) or the pixel path
    (module docstring)."""
    n, out_h, out_w, kernel_h, kernel_w, channels = (shape[k] for k in ("n", "out_h", "out_w", "kernel_h",
                                                                         "kernel_w", "channels"))
    groups, partial = math.ceil(channels / 8), int(channels % 8 != 0)
    pixels, rows, taps = n * out_h * out_w, n * out_h, kernel_h * kernel_w
    if not shape.get("band"):
        rows_valid, _, _ = shape["rows"]
        cols_valid, _, _ = shape["cols"]
        return {"dwp_pixels": pixels, "dwp_groups": pixels * groups, "dwp_partial": pixels * partial,
                "dwp_tap_rows": pixels * kernel_h * groups, "dwp_taps": pixels * taps * groups,
                "dwp_valid_taps": n * rows_valid * cols_valid * groups}
    width = (out_w - 1) * shape["stride_w"] + kernel_w
    columns = min(shape["in_w"], width - shape["pad_left"])
    data_fills, pad_fills = (n * count for count in band_fills(out_h, shape["stride_h"], shape["pad_top"],
                                                               kernel_h, shape["in_h"]))
    # passes over group chunks: per pass every row, slot and row fill again, each group once
    passes = shape.get("passes", 1)
    fast = 0 if shape.get("left_shifts") else groups - partial   # band_row_right: the full groups
    pairs, single = out_w // 2, out_w % 2
    loop_taps = 0 if kernel_w == 3 else 1   # pair_taps: a 3-tap row is unrolled
    return {"dwb_batches": n * passes, "dwb_fill_steps": n * math.ceil(kernel_h * groups * width * 8 / 16),
            "dwb_rows": rows * passes, "dwb_slots": rows * kernel_h * passes, "dwb_data_rows": data_fills * passes,
            "dwb_data_groups": data_fills * groups, "dwb_data_columns": data_fills * groups * columns,
            "dwb_data_partial": data_fills * partial * columns, "dwb_pad_rows": pad_fills * passes,
            "dwb_pad_steps": pad_fills * math.ceil(groups * width * 8 / 16),
            "dwb_fast_rows": rows * passes * (not shape.get("left_shifts")), "dwb_fast_groups": rows * fast,
            "dwb_fast_pairs": rows * fast * pairs, "dwb_fast_singles": rows * fast * single,
            "dwb_groups": rows * (groups - fast), "dwb_pairs": rows * (groups - fast) * pairs,
            "dwb_singles": rows * (groups - fast) * single,
            "dwb_pair_rows": rows * groups * pairs * kernel_h, "dwb_pair_taps": rows * groups * pairs * taps,
            "dwb_pair_loop_taps": rows * groups * pairs * taps * loop_taps,
            "dwb_single_rows": rows * groups * single * kernel_h, "dwb_single_taps": rows * groups * single * taps}


def band_fills(out_h: int, stride: int, pad: int, kernel: int, height: int) -> tuple[int, int]:
    """(data rows, padding rows) the band path's ring copies for one batch: slot
    ``(in_y + pad) mod kH``; a row already in its slot is not copied again, and a padding row
    above the input is not written into a slot still holding the pass's initial fill."""
    loaded: list[int | None] = [None] * kernel
    data = padding = 0
    for y in range(out_h):
        for i in range(kernel):
            in_y = y * stride - pad + i
            slot = (in_y + pad) % kernel
            if loaded[slot] != in_y and (in_y >= 0 or loaded[slot] is not None):
                data += 0 <= in_y < height
                padding += not 0 <= in_y < height
                loaded[slot] = in_y
    return data, padding


def window_shape(x_shape, out_shape, kernel, strides, pads, dilations, channels_per_group: int) -> dict:
    """The shape record the count functions read."""
    _, height, width, channels = x_shape
    n, out_h, out_w, _ = out_shape
    depth = kernel[0] * kernel[1] * channels_per_group
    return {"n": n, "out_h": out_h, "out_w": out_w, "kernel_h": kernel[0], "kernel_w": kernel[1],
            "channels": channels_per_group if channels_per_group > 1 else channels, "in_w": width,
            "rows": axis_counts(out_h, strides[0], pads[0], dilations[0], kernel[0], height),
            "cols": axis_counts(out_w, strides[1], pads[1], dilations[1], kernel[1], width),
            "depth": depth, "depth_padded": depth, "pad_left": pads[1], "pad_top": pads[0], "in_h": height,
            "stride_h": strides[0], "stride_w": strides[1],
            "is_3x3": tuple(kernel) == (3, 3) and tuple(dilations) == (1, 1),
            "band_width": max(out_w * strides[1] + 3, width + pads[1])}


def dsp_conv_block(shape: dict) -> int:
    """The DSP conv's pixels per block, by the header's rule ``MCU_CONV2D_S8_DSP_BLOCK`` (as
    :func:`mcudeploy.kernels.dsp.conv_block`): 4 or 3 pixels x 1 channel, else 2 x 2."""
    from ..kernels.scratch_formula import scratch_formula
    in_bytes = shape["n"] * shape["in_h"] * shape["in_w"] * shape["channels"]
    out_bytes = shape["n"] * shape["out_h"] * shape["out_w"] * shape["out_channels"]
    return scratch_formula("MCU_CONV2D_S8_DSP_BLOCK", depth=shape["depth"], in_c=shape["channels"],
                           in_bytes=in_bytes, out_bytes=out_bytes)


def quad_counts(pixels: int, channels: int, depth_padded: int, block: int) -> dict[str, float]:
    """The DSP conv's ``block`` pixels x 1 channel loop (``gemm_quad_dsp.c``): per block its
    fields and one call, per block and channel the output stage and ``K_p / 4`` steps."""
    blocks = math.ceil(pixels / block)
    prefix = f"q{block}_"
    return {prefix + "calls": blocks, prefix + "channel_blocks": blocks * channels,
            prefix + "steps": blocks * channels * depth_padded // 4, prefix + "outputs": pixels * channels,
            prefix + "short_blocks": (pixels % block != 0) * channels}


def conv_variant_counts(shape: dict, pointwise: bool) -> dict[str, float]:
    """Every variant's conv loops: DSP (im2col to q15 by 4, 2x2 blocks over K_p = ceil4(K), or
    the quad / triple blocks of :func:`dsp_conv_block`)
    and MVE (im2col by 16 unless a pointwise C mod 16 == 0 read in place, 2x4 blocks over
    K_p = ceil16(K))."""
    pixels, channels, depth = shape["n"] * shape["out_h"] * shape["out_w"], shape["channels"], shape["depth"]
    out_channels = shape["out_channels"]
    block = dsp_conv_block(shape)
    dsp = (blocked_counts(pixels, out_channels, math.ceil(depth / 4) * 4, 2, 4) if block == 2 else
           quad_counts(pixels, out_channels, math.ceil(depth / 4) * 4, block))
    mve = blocked_counts(pixels, out_channels, math.ceil(depth / 16) * 16, 4, 16, few=pointwise)
    features = {**dsp, **mve, **packed_pair_counts(shape, pointwise)}
    if pointwise:
        features.update({"pw4_pixels": pixels, "pw4_words": pixels * (channels // 4),
                         "pw4_tail": pixels * (channels % 4 != 0)})
    elif channels % 4:
        features.update(gather_counts({**shape, "depth_padded": math.ceil(depth / 4) * 4}))
    else:
        features.update(im2col_counts(shape, 4))
    if not (pointwise and channels % 16 == 0):
        features.update(mve_im2col_counts(shape, pointwise))
    return features


def packed_pair_counts(shape: dict, pointwise: bool) -> dict[str, float]:
    """The pair loop of an im2col Helium conv's packed scales (``gemm_mve.c``
    ``packed_blocks``): every pixel pair's whole blocks of four channels when every shift is
    <= -1 and ``K_p >= 32``; per pair one call, per block its output stage (``g4p_fixups``: the
    rounding fix-up, only where the clamp's low bound is below the output offset), per block
    ``K_p / 16`` steps, ``floor(K_p / 32)`` loop turns and the even entry. Those pairs' blocks
    leave the ``g4_pair_*`` counts (set to 0 here); other calls run ``g4_``'s loops."""
    chunks, blocks = math.ceil(shape["depth"] / 16), shape["out_channels"] // 4
    applies = not pointwise and not shape.get("left_shifts", False) and chunks >= 2 and blocks > 0
    pairs = (shape["n"] * shape["out_h"] * shape["out_w"]) // 2 if applies else 0
    pair_blocks = pairs * blocks
    moved = {"g4_pair_blocks": 0, "g4_pair_steps": 0} if applies else {}
    return {**moved, "g4p_calls": pairs, "g4p_blocks": pair_blocks, "g4p_steps": pair_blocks * chunks,
            "g4p_turns": pair_blocks * (chunks // 2), "g4p_even_blocks": pair_blocks * (chunks % 2 == 0),
            "g4p_fixups": pair_blocks * (not shape.get("clamped_low", False))}


def mve_im2col_counts(shape: dict, pointwise: bool) -> dict[str, float]:
    """``conv_mve.c``'s columns: a pixel whose window is inside with kernel rows of at most 16
    bytes takes one predicated copy per kernel row (``i2c16_short_*``), the others the
    im2col loops; the K..K_p tail is not filled. A pointwise conv copies only its last pixels
    (:func:`pointwise_copied`), every pixel alike."""
    depth_padded = math.ceil(shape["depth"] / 16) * 16
    counts = im2col_counts({**shape, "depth_padded": depth_padded}, 16)
    counts["i2c16_depth_fill"] = 0
    rows_full, whole_x = shape["rows"][1], shape["cols"][2]
    taps_row = shape["kernel_w"] * shape["channels"]
    # the inside windows of whole 16-byte kernel rows (not a pointwise conv): one DLS/LE copy each
    window = shape["n"] * rows_full * whole_x if not pointwise and taps_row % 16 == 0 else 0
    short = shape["n"] * rows_full * whole_x if taps_row <= 16 and not window else 0
    kernel_h, row_steps = shape["kernel_h"], math.ceil(taps_row / 16)
    inside = short + window
    counts.update({"i2c16_pixels": counts["i2c16_pixels"] - inside, "i2c16_rows": counts["i2c16_rows"] - inside * kernel_h,
                   "i2c16_whole_rows": counts["i2c16_whole_rows"] - inside * kernel_h,
                   "i2c16_whole_steps": counts["i2c16_whole_steps"] - inside * kernel_h * row_steps,
                   "i2c16_short_pixels": short, "i2c16_short_rows": short * kernel_h,
                   "i2c16_window_pixels": window, "i2c16_window_rows": window * kernel_h,
                   "i2c16_window_steps": window * kernel_h * row_steps})
    if pointwise:
        pixels = shape["n"] * shape["out_h"] * shape["out_w"]
        share = pointwise_copied(pixels, shape["depth"], depth_padded) / pixels
        counts = {name: value * share for name, value in counts.items()}
    return counts


def pointwise_copied(pixels: int, depth: int, depth_padded: int) -> int:
    """Pixels of a pointwise conv that ``conv_mve.c`` copies into the columns: the pairs whose
    K_p-byte rows would pass the tensor's end ((p + 1 + pair) K + K_p - K > P K)."""
    copied, pixel = 0, (pixels - 1) // 2 * 2   # the last pair's first pixel; the test grows with p
    while pixel >= 0:
        pair = int(pixel + 1 < pixels)
        if (pixel + 1 + pair) * depth + depth_padded - depth <= pixels * depth:
            break
        copied, pixel = copied + 1 + pair, pixel - 2
    return copied


def requant_counts(pixels: int, channels: int, context: dict) -> dict[str, float]:
    """Outputs per requantization path (from :func:`requant_context`): ``requant_left`` of a
    Helium call with a shift >= 0 (not all right shifts), ``requant_general`` of a DSP call
    whose channels are not all "simple", ``requant_wide`` of the wide channels (64-bit form)."""
    outputs = pixels * channels
    return {"requant_left": outputs if context.get("left_shifts") else 0,
            "requant_general": outputs if context.get("general_requant") else 0,
            "requant_wide": pixels * context.get("wide_channels", 0)}


def requant_context(shifts, multipliers, biases, depth: int, grouped: bool) -> dict:
    """The requantization paths the variants take for these prepared parameters, as
    ``runtime/src/dsp/mcu_dsp_internal.h`` and ``mcu_mve_internal.h`` decide them:
    ``reach = depth 128 255``; simple: ``shift <= -1`` and ``|bias| + reach < 2^30``; wide:
    ``|bias| >= (2^30 >> max(shift, 0)) - reach`` or a negative multiplier. ``grouped``: the
    depthwise kernel, where a group of 4 channels with one wide channel runs all 4 wide."""
    shifts = np.asarray(shifts, np.int64).reshape(-1)
    multipliers = np.asarray(multipliers, np.int64).reshape(-1)
    biases = np.zeros_like(shifts) if biases is None else np.abs(np.asarray(biases, np.int64).reshape(-1))
    reach = depth * 128 * 255 if depth < 32768 else (1 << 31) - 1
    limit = ((1 << 30) >> np.maximum(shifts, 0)) - reach
    wide = (multipliers < 0) | (limit <= 0) | (biases >= limit)
    if grouped:
        whole = len(wide) // 4 * 4
        groups = wide[:whole].reshape(-1, 4).any(axis=1).repeat(4)
        wide = np.concatenate([groups, wide[whole:]])
    simple = bool(np.all(shifts <= -1)) and (1 << 30) - reach > 0 and bool(np.all(biases < (1 << 30) - reach))
    return {"left_shifts": bool(np.any(shifts > -1)), "general_requant": not simple, "wide_channels": int(wide.sum())}


def pool_variant_counts(shape: dict, average: bool) -> dict[str, float]:
    """DSP pooling: per pixel, ``C // 4`` word groups over the in-bounds rows / taps (an
    average window above 256 taps runs every channel alone), the ``C mod 4`` channels alone;
    MVE: ``ceil(C / L)`` predicated groups, ``L`` = 8 (average: per-channel stores) or 16 (max)."""
    n, out_h, out_w, channels = shape["n"], shape["out_h"], shape["out_w"], shape["channels"]
    rows_valid, _, _ = shape["rows"]
    cols_valid, _, _ = shape["cols"]
    pixels, valid_rows, valid_taps = n * out_h * out_w, n * out_w * rows_valid, n * rows_valid * cols_valid
    packed = not average or shape["kernel_h"] * shape["kernel_w"] <= 256
    groups = channels // 4 if packed else 0
    tail = channels - 4 * groups
    lanes = 8 if average else 16
    vectors = math.ceil(channels / lanes)
    return {"pool4_pixels": pixels, "pool4_groups": pixels * groups, "pool4_rows": valid_rows * groups,
            "pool4_taps": valid_taps * groups, "pool4_tail": pixels * tail, "pool4_tail_rows": valid_rows * tail,
            "pool4_tail_taps": valid_taps * tail, "pool4_outputs": pixels * channels,
            "poolm_pixels": pixels, "poolm_groups": pixels * vectors, "poolm_rows": valid_rows * vectors,
            "poolm_taps": valid_taps * vectors, "poolm_outputs": pixels * channels}


def fully_connected_variant_counts(rows: int, units: int, depth: int) -> dict[str, float]:
    """DSP: per row, blocks of 4 units (``fcd_quad*``), then a pair and an odd unit, each over
    ``depth // 4`` words, and the ``depth mod 4`` tail per block and per unit; MVE: the conv's
    2 x 4 blocks with rows as pixels, rows copied to 16-byte steps when ``depth mod 16 != 0``."""
    quads, rest = rows * (units // 4), units % 4
    pairs, singles = rows * (rest // 2), rows * (rest % 2)
    tail, words = depth % 4, depth // 4
    copied = rows * math.ceil(depth / 16) if depth % 16 else 0
    return {"fcd_rows": rows, "fcd_quads": quads, "fcd_quad_steps": quads * words, "fcd_pairs": pairs,
            "fcd_steps": pairs * words, "fcd_singles": singles, "fcd_single_steps": singles * words,
            "fcd_tail": (quads + pairs + singles) * tail, "fcd_tail_macs": rows * units * tail,
            "fcd_outputs": rows * units,
            "fcm_copy_rows": rows if depth % 16 else 0, "fcm_copy_steps": copied,
            **blocked_counts(rows, units, math.ceil(depth / 16) * 16, 4, 16, few=True)}
