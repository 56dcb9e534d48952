"""[preprocess]: the integer Python implementation against an independent float reference, the
generated C bit-exact with it on the host and on QEMU M4 / M55, and bad specs refused."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from mcudeploy.errors import UsageError
from mcudeploy.ir import DType, QuantParams, Value
from mcudeploy.preprocess import parse_preprocess, preprocess_frame
from mcudeploy.preprocess.c_check import run_preprocess_c
from mcudeploy.preprocess.emit import preprocess_files
from mcudeploy.preprocess.spec import FORMATS

HAVE_ARM = all(shutil.which(tool) for tool in ("arm-none-eabi-gcc", "qemu-system-arm"))


def _input(shape=(1, 24, 20, 3), dtype=DType.INT8, layout="NHWC", scale=0.02, zero_point=-3) -> Value:
    quant = QuantParams(np.array([scale], np.float32), np.array([zero_point], np.int32)) if dtype.is_integer else None
    return Value("image", dtype, shape, quant=quant, layout=layout)


def _frame(spec, seed=0) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, spec.frame_bytes, dtype=np.uint8).tobytes()


def _spec(**keys):
    return parse_preprocess({"format": "rgb888", "width": 64, "height": 48, **keys})


CASES = [dict(format=name, resize=method) for name in FORMATS for method in ("nearest", "bilinear")]


@pytest.mark.parametrize("keys", CASES, ids=lambda k: f"{k['format']}-{k['resize']}")
@pytest.mark.parametrize("shape,layout,dtype", [((1, 24, 20, 3), "NHWC", DType.INT8),
                                                ((1, 1, 24, 20), "NCHW", DType.UINT8),
                                                ((1, 3, 24, 20), "NCHW", DType.FLOAT32)], ids=["nhwc-i8", "gray-u8",
                                                                                              "nchw-f32"])
def test_c_on_host_is_bit_exact_with_python(keys, shape, layout, dtype):
    spec = _spec(crop=[5, 3, 50, 40], channel_order="BGR", mean=[0.4], std=[0.25], **keys)
    value = _input(shape, dtype, layout, scale=0.03 if dtype != DType.UINT8 else 0.02,
                   zero_point=0 if dtype == DType.UINT8 else -3)
    frame = _frame(spec)
    python = preprocess_frame(frame, spec, value)
    assert python.shape == shape and python.dtype == np.dtype(dtype.numpy)
    produced, _ = run_preprocess_c(preprocess_files(spec, value), frame)
    assert produced == python.tobytes()


def test_rgb888_matches_float_reference():
    """Nearest resize at a 2x ratio and the normalisation, against plain float numpy."""
    spec = _spec(resize="nearest", mean=[0.5, 0.4, 0.3], std=[0.2, 0.25, 0.3])
    value = _input((1, 24, 32, 3), DType.FLOAT32)
    frame = _frame(spec, 3)
    pixels = np.frombuffer(frame, np.uint8).reshape(48, 64, 3).astype(np.float64)
    sampled = pixels[1::2, 1::2]   # half-pixel centres of a 2x down-scale
    expected = (sampled / 255.0 - [0.5, 0.4, 0.3]) / [0.2, 0.25, 0.3]
    np.testing.assert_allclose(preprocess_frame(frame, spec, value)[0], expected, rtol=1e-6, atol=1e-6)


def test_bilinear_and_colour_conversions_match_float_reference():
    """Bilinear within one rounding step of float interpolation; RGB565 / YUV422 / gray within one step."""
    spec = _spec(resize="bilinear", scale=1.0)
    value = _input((1, 20, 30, 3), DType.FLOAT32)
    frame = _frame(spec, 4)
    pixels = np.frombuffer(frame, np.uint8).reshape(48, 64, 3).astype(np.float64)
    reference = np.empty((20, 30, 3))
    for dy in range(20):
        for dx in range(30):
            sy, sx = max((dy + 0.5) * 48 / 20 - 0.5, 0), max((dx + 0.5) * 64 / 30 - 0.5, 0)
            y0, x0 = int(sy), int(sx)
            y1, x1, fy, fx = min(y0 + 1, 47), min(x0 + 1, 63), sy - y0, sx - x0
            reference[dy, dx] = ((1 - fy) * ((1 - fx) * pixels[y0, x0] + fx * pixels[y0, x1])
                                 + fy * ((1 - fx) * pixels[y1, x0] + fx * pixels[y1, x1]))
    assert np.abs(preprocess_frame(frame, spec, value)[0] - reference).max() <= 1.5
    word = np.array([0xF81F], "<u2").tobytes()    # magenta in RGB565
    magenta = preprocess_frame(word, parse_preprocess({"format": "rgb565", "width": 1, "height": 1, "scale": 1.0}),
                               _input((1, 1, 1, 3), DType.FLOAT32))
    assert magenta.reshape(-1).tolist() == [255, 0, 255]
    yuv = bytes([235, 128, 235, 128])  # white
    white = preprocess_frame(yuv, parse_preprocess({"format": "yuv422", "width": 2, "height": 1, "scale": 1.0}),
                             _input((1, 1, 2, 3), DType.FLOAT32))
    assert np.abs(white - 255).max() <= 1


@pytest.mark.parametrize("keys,value,message", [
    (dict(format="rgb888", width=8, height=8), _input((1, 8, 8, 4)), "4 channels"),
    (dict(format="rgb888", width=8, height=8, crop=[4, 4, 8, 8]), _input((1, 8, 8, 3)), "inside the 8 x 8"),
    (dict(format="rgb888", width=8, height=8, std=[0.0]), _input((1, 8, 8, 3)), "non-zero"),
    (dict(format="rgb888", width=8, height=8, mean=[1, 2]), _input((1, 8, 8, 3)), "one value or 3"),
    (dict(format="rgb888", width=8, height=8, offset=1000.0), _input((1, 8, 8, 3)), "every pixel becomes one"),
    (dict(format="bayer", width=8, height=8), _input((1, 8, 8, 3)), "choose one of"),
    (dict(format="rgb888", width=8, height=8, sizes=3), _input((1, 8, 8, 3)), "unknown key 'sizes'"),
    (dict(format="rgb888", width=8, height=8), _input((1, 8, 3)), "not one image"),
])
def test_bad_spec_is_one_clear_error(keys, value, message):
    with pytest.raises(UsageError, match=message):
        preprocess_frame(bytes(8 * 8 * 3), parse_preprocess(keys), value)


@pytest.mark.skipif(not HAVE_ARM, reason="arm-none-eabi-gcc / qemu-system-arm missing: tools/install_toolchain.sh")
@pytest.mark.parametrize("board", ["mps2-an386", "mps3-an547"])
def test_qemu_320x240_rgb565_to_mobilenet_input_is_bit_exact(board):
    spec = parse_preprocess({"format": "rgb565", "width": 320, "height": 240, "crop": [40, 0, 240, 240],
                             "resize": "bilinear", "scale": 1.0 / 127.5, "offset": -1.0})
    value = _input((1, 128, 128, 3), DType.INT8, scale=1.0 / 127.5, zero_point=0)
    frame = _frame(spec, 7)
    produced, instructions = run_preprocess_c(preprocess_files(spec, value), frame, board)
    assert produced == preprocess_frame(frame, spec, value).tobytes()
    assert instructions is not None and instructions > 128 * 128
