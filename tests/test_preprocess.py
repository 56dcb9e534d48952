"""[preprocess]: the integer Python implementation against an independent float reference, the
generated C bit-exact with it on the host and on QEMU M4 / M55, and bad specs refused."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from mcudeploy.errors import DataError, UsageError
from mcudeploy.ir import DType, QuantParams, Value
from mcudeploy.preprocess import parse_preprocess, preprocess_frame
from mcudeploy.preprocess.audio import audio_tables, preprocess_clip, read_wav
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
    assert instructions is not None and 128 * 128 * 3 < instructions < 50_000_000


AUDIO = {"kind": "audio", "sample_rate": 16000, "samples": 16000, "frame_length": 640, "frame_step": 320,
         "upper_hz": 4000.0}


def _clip(seed=1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(16000) / 16000
    tone = 6000 * np.sin(2 * np.pi * (300 + 1500 * t) * t) + rng.normal(0, 300, t.size)
    return np.clip(tone, -32768, 32767).astype(np.int16)


@pytest.mark.parametrize("dtype", [DType.INT8, DType.FLOAT32])
def test_audio_c_on_host_is_bit_exact_with_python(dtype):
    spec = parse_preprocess(AUDIO)
    value = _input((1, 49, 10, 1), dtype, scale=0.1, zero_point=-60)
    clip = _clip()
    python = preprocess_clip(clip, spec, value)
    assert python.shape == (1, 49, 10, 1)
    produced, _ = run_preprocess_c(preprocess_files(spec, value), clip.astype("<i2").tobytes())
    assert produced == python.tobytes()


def test_audio_matches_float_log_mel_reference():
    """ln(mel energy + 1) against float numpy (rfft / N, the same triangular filters), where the
    energy is well above the integer grid."""
    spec = parse_preprocess(AUDIO)
    clip = _clip(2)
    got = preprocess_clip(clip, spec, _input((1, 49, 10, 1), DType.FLOAT32))[0, :, :, 0]
    tables = audio_tables(spec, _input((1, 49, 10, 1)))
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(640) / 640)
    frames = np.stack([clip[i * 320:i * 320 + 640] * window for i in range(49)])
    power = np.abs(np.fft.rfft(frames, 1024) / 1024) ** 2
    weights = np.zeros((10, 513))
    offset = 0
    for band in range(10):
        start, count = tables.mel_start[band], tables.mel_count[band]
        weights[band, start:start + count] = tables.mel_weights[offset:offset + count] / 32768
        offset += count
    energy = power @ weights.T
    strong = energy > 100
    assert strong.mean() > 0.5
    np.testing.assert_allclose(got[strong], np.log(energy[strong] + 1), atol=0.1)
    loud = energy > 1e4
    np.testing.assert_allclose(got[loud], np.log(energy[loud] + 1), atol=0.01)


def test_wav_file_and_bad_audio_specs(tmp_path):
    import wave
    spec = parse_preprocess(AUDIO)
    clip = _clip(3)
    path = tmp_path / "clip.wav"
    with wave.open(str(path), "wb") as handle:
        handle.setnchannels(1), handle.setsampwidth(2), handle.setframerate(16000)
        handle.writeframes(clip[:12000].astype("<i2").tobytes())
    samples = read_wav(path, spec)
    assert samples[:12000].tolist() == clip[:12000].tolist() and not samples[12000:].any()
    with pytest.raises(DataError, match="16-bit mono at sample_rate = 8000"):
        read_wav(path, parse_preprocess({**AUDIO, "sample_rate": 8000, "upper_hz": 4000.0}))
    with pytest.raises(UsageError, match="49 frames x 10 mel bins = 490 values, but input 'image'"):
        preprocess_clip(clip, spec, _input((1, 50, 10, 1)))
    with pytest.raises(UsageError, match="power of two"):
        parse_preprocess({**AUDIO, "fft_size": 1000})
    with pytest.raises(UsageError, match="upper_hz"):
        parse_preprocess({**AUDIO, "upper_hz": 9000.0})


@pytest.mark.skipif(not HAVE_ARM, reason="arm-none-eabi-gcc / qemu-system-arm missing: tools/install_toolchain.sh")
@pytest.mark.parametrize("board", ["mps2-an386", "mps3-an547"])
def test_qemu_1s_16khz_clip_to_dscnn_input_is_bit_exact(board):
    from conftest import shared_model
    from mcudeploy.driver import load_graph
    value = load_graph(shared_model("mlperf_tiny/dscnn_kws_int8.tflite")).inputs[0]
    spec = parse_preprocess(AUDIO)
    clip = _clip(4)
    produced, instructions = run_preprocess_c(preprocess_files(spec, value), clip.astype("<i2").tobytes(), board)
    assert produced == preprocess_clip(clip, spec, value).tobytes()
    assert instructions is not None and 49 * 1024 * 10 < instructions < 200_000_000


@pytest.mark.slow
def test_validate_and_quantize_take_a_folder_through_preprocess(tmp_path, capsys):
    """The PC's samples are the board's tensors: validate --data FOLDER --preprocess feeds the
    generated code exactly what preprocess_frame makes of each image file."""
    from PIL import Image

    from conftest import shared_model
    from mcudeploy.cli.main import main
    from mcudeploy.driver import load_graph
    from mcudeploy.preprocess.dataset import folder_arrays, samples_of
    model = shared_model("mlperf_tiny/resnet8_int8.tflite")
    config = tmp_path / "pre.toml"
    config.write_text('[preprocess]\nformat = "rgb888"\nwidth = 64\nheight = 48\ncrop = [8, 0, 48, 48]\n'
                      'resize = "bilinear"\n')
    folder = tmp_path / "images"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for index in range(2):
        Image.fromarray(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)).save(folder / f"{index}.png")
    graph = load_graph(model)
    arrays = folder_arrays(graph, folder, parse_preprocess({"format": "rgb888", "width": 64, "height": 48,
                                                            "crop": [8, 0, 48, 48]}))
    first = np.asarray(Image.open(folder / "0.png"))
    spec = parse_preprocess({"format": "rgb888", "width": 64, "height": 48, "crop": [8, 0, 48, 48]})
    assert arrays[graph.inputs[0].name][0].tobytes() == preprocess_frame(first, spec, graph.inputs[0]).tobytes()
    code = main(["validate", str(model), "--on", "host", "--data", str(folder), "--preprocess", str(config)])
    assert code == 0 and "bit-exact against the integer reference (2 samples)" in capsys.readouterr().out
    assert main(["validate", str(model), "--on", "host", "--data", str(folder / "0.png"),
                 "--preprocess", str(config)]) == 2
    float_model = shared_model("mlperf_tiny/resnet8_float.tflite")
    float_graph = load_graph(float_model)
    samples = samples_of(folder_arrays(float_graph, folder, spec))
    expected = preprocess_frame(first, spec, float_graph.inputs[0])
    assert len(samples) == 2 and expected.dtype == np.float32
    np.testing.assert_array_equal(samples[0][float_graph.inputs[0].name], expected)
    assert main(["quantize", str(float_model), "--calib", str(folder), "--preprocess", str(config),
                 "-o", str(tmp_path / "q.tflite")]) == 0


@pytest.mark.slow
def test_generate_writes_preprocess_from_config_and_project_checks_it(tmp_path, capsys):
    from conftest import shared_model
    from mcudeploy.cli.main import main
    from mcudeploy.workflow.project import load_project
    model = shared_model("tflite_micro/person_detect_int8.tflite")
    config = tmp_path / "cfg.toml"
    config.write_text('[preprocess]\nformat = "yuv422"\nwidth = 160\nheight = 120\nresize = "nearest"\n'
                      'scale = 1.0\noffset = -128.0\n')
    assert main(["generate", str(model), "--config", str(config), "-o", str(tmp_path / "out")]) == 0
    header = (tmp_path / "out" / "preprocess.h").read_text()
    assert "#define PREPROCESS_FRAME_BYTES 38400" in header and (tmp_path / "out" / "preprocess.c").exists()
    config.write_text('[preprocess]\nformat = "yuv422"\nwidth = 160\nheight = 120\nresise = "nearest"\n')
    assert main(["generate", str(model), "--config", str(config), "-o", str(tmp_path / "out2")]) == 2
    assert "unknown key 'resise'" in capsys.readouterr().err
    project = tmp_path / "mcudeploy.toml"
    project.write_text(f'[project]\nmodel = "{model}"\n[preprocess]\nformat = "rgb888"\nwidth = 8\nheight = 8\n'
                       'std = [0.0]\n')
    with pytest.raises(UsageError, match=r"\[preprocess\] std = \[0.0\]: a standard deviation must be non-zero"):
        load_project(project)
