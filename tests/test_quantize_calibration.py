"""Calibration data sources and their checks (every error before any work)."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from conftest import require
from mcudeploy.errors import DataError, UsageError
from mcudeploy.ir import DType, Graph
from mcudeploy.quantize.calibration import ImagePreprocessing, calibrate, load_calibration


def graph_with(shape=(1, 3, 8, 8), layout="NCHW", inputs=("x",)) -> Graph:
    graph = Graph("g")
    values = [graph.add_input(name, DType.FLOAT32, shape, layout=layout) for name in inputs]
    node = graph.add_node("Relu", [values[0]], name="relu")
    if len(values) > 1:
        node = graph.add_node("Add", [node.outputs[0], values[1]], name="add")
    graph.outputs = [node.outputs[0]]
    return graph


def random(count, shape=(1, 3, 8, 8), seed=0):
    return np.random.default_rng(seed).standard_normal((count,) + shape).astype(np.float32)


@pytest.mark.parametrize("array_shape", [(120, 1, 3, 8, 8), (120, 3, 8, 8)])
def test_npy_with_or_without_the_batch_axis(tmp_path, array_shape):
    np.save(tmp_path / "calib.npy", np.zeros(array_shape, np.float32) + np.arange(120).reshape(
        (120,) + (1,) * (len(array_shape) - 1)))
    samples = load_calibration(tmp_path / "calib.npy", graph_with())
    assert len(samples) == 120 and samples[7]["x"].shape == (1, 3, 8, 8)
    assert samples[7]["x"].flat[0] == 7


def test_npz_keyed_by_input_name(tmp_path):
    graph = graph_with(inputs=("x", "y"))
    np.savez(tmp_path / "calib.npz", x=random(100), y=random(100, seed=1))
    samples = load_calibration(tmp_path / "calib.npz", graph)
    assert len(samples) == 100 and set(samples[0]) == {"x", "y"}


def test_npz_missing_input_names_it(tmp_path):
    np.savez(tmp_path / "calib.npz", x=random(100))
    with pytest.raises(DataError, match="no data for input.*y"):
        load_calibration(tmp_path / "calib.npz", graph_with(inputs=("x", "y")))


@pytest.mark.parametrize("bad,match", [
    (np.full((100, 1, 3, 8, 8), np.nan, np.float32), "NaN or Inf"),
    (np.zeros((100, 1, 3, 8, 9), np.float32), "shape"),
])
def test_bad_arrays_raise_data_error(tmp_path, bad, match):
    np.save(tmp_path / "calib.npy", bad)
    with pytest.raises(DataError, match=match):
        load_calibration(tmp_path / "calib.npy", graph_with())


def test_inf_in_one_iterable_sample_is_found_before_any_work():
    data = list(random(100))
    data[42] = data[42].copy()
    data[42][0, 0, 0, 0] = np.inf
    with pytest.raises(DataError, match="sample 42"):
        load_calibration(data, graph_with())


def test_empty_and_missing_sources():
    with pytest.raises(DataError, match="no calibration samples"):
        load_calibration([], graph_with())
    with pytest.raises(UsageError, match="does not exist"):
        load_calibration("/nonexistent/calib.npy", graph_with())


def test_few_samples_warn_and_identical_samples_note(caplog):
    with caplog.at_level(logging.WARNING):
        load_calibration([random(1)[0]] * 10, graph_with())
    text = caplog.text
    assert "only 10 calibration samples" in text and "nearly identical" in text


def test_constant_input_is_reported(caplog):
    with caplog.at_level(logging.WARNING):
        load_calibration([np.ones((1, 3, 8, 8), np.float32)] * 100, graph_with())
    assert "constant" in caplog.text


def test_enough_varied_samples_are_quiet(caplog):
    with caplog.at_level(logging.WARNING):
        load_calibration(list(random(100)), graph_with())
    assert caplog.text == ""


@pytest.mark.parametrize("layout,channel_order", [("NCHW", "RGB"), ("NHWC", "BGR")])
def test_image_folder_with_preprocessing(tmp_path, layout, channel_order):
    image_module = require("PIL.Image")
    pixels = np.zeros((16, 20, 3), np.uint8)
    pixels[..., 0] = 255  # pure red
    image_module.fromarray(pixels).save(tmp_path / "red.png")
    shape = (1, 3, 8, 8) if layout == "NCHW" else (1, 8, 8, 3)
    preprocessing = ImagePreprocessing(scale=1 / 255, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5),
                                       channel_order=channel_order)
    samples = load_calibration(tmp_path, graph_with(shape, layout), preprocessing=preprocessing)
    x = samples[0]["x"]
    assert x.shape == shape
    red = x[0, 0] if layout == "NCHW" else x[0, ..., 0]
    blue = x[0, 2] if layout == "NCHW" else x[0, ..., 2]
    first, last = (red, blue) if channel_order == "RGB" else (blue, red)
    np.testing.assert_allclose(first, 1.0, atol=1e-6)
    np.testing.assert_allclose(last, -1.0, atol=1e-6)


def test_image_folder_without_images(tmp_path):
    (tmp_path / "notes.txt").write_text("nothing")
    with pytest.raises(DataError, match="no image files"):
        load_calibration(tmp_path, graph_with())


def test_calibrate_observes_every_float_tensor():
    graph = graph_with()
    observed = calibrate(graph, load_calibration(list(random(100)), graph), progress=False)
    assert set(observed) == {"x", "relu"}
    assert observed["relu"].low == 0.0 and observed["x"].low < 0
