"""``mcudeploy plan`` says, per Concat, whether it is done in place (and which producers write
their slices) or why it copies (report/plan_render.py ``concat_lines``), and a SqueezeNet fire
module exported by TensorFlow (Keras -> TFLite converter, full int8) gets concat in place.

Recipe: the fire module of test_concat_channel_slices.py (ONNX, quantized by mcudeploy) planned
three ways (in place; concat in place off; the Conv kernels' strided output withdrawn), each
line checked against the plan's own record; then a Keras fire module converted by TFLite's
converter (slow: TensorFlow), planned through the CLI: the line names both expand convs, and
the arena is smaller than with the Concat copying.
"""
from __future__ import annotations

import sys

import pytest

from conftest import REPO
from mcudeploy.driver import deploy
from mcudeploy.options import DeploymentOptions
from mcudeploy.report.plan_render import concat_lines
from test_concat_channel_slices import concat_of, graph_of


def _line(graph, options=DeploymentOptions()):
    deployment = deploy(graph, options)
    lines = concat_lines(deployment.graph, deployment.plan)
    assert len(lines) == 1
    return lines[0], deployment


def test_an_in_place_concat_names_the_producers_that_write_its_slices():
    graph = graph_of("fire")
    line, deployment = _line(graph)
    concat = concat_of(deployment.graph)
    producers = [value.producer.name for value in concat.inputs]
    assert concat.name in deployment.plan.elided_nodes
    assert line.startswith(f"concat {concat.name}: in place (channel slices, written with a channel stride by ")
    assert all(f"{name} (Conv)" in line for name in producers)


def test_a_copying_concat_says_why():
    from mcudeploy.kernels.strided_output import STRIDED_OUTPUT
    graph = graph_of("fire")
    off, deployment = _line(graph, DeploymentOptions(concat_in_place=False))
    producers = ", ".join(f"{value.producer.name} (Conv)" for value in concat_of(deployment.graph).inputs)
    assert off.endswith(f": copies (concat in place is off); inputs from {producers}")
    saved = STRIDED_OUTPUT["reference"].pop("Conv")
    try:
        refused, deployment = _line(graph, DeploymentOptions(kernels="reference"))
    finally:
        STRIDED_OUTPUT["reference"]["Conv"] = saved
    first = concat_of(deployment.graph).inputs[0].producer.name
    assert f": copies (channel slices: the producer {first!r} (Conv, kernel reference) does not write " \
           "a strided output" in refused


@pytest.mark.slow
def test_a_tensorflow_exported_fire_module_is_planned_in_place(tmp_path, capsys):
    sys.path.insert(0, str(REPO / "tools"))
    from make_zoo_models import _fire, _keras, tflite_int8
    from mcudeploy.cli.main import main
    keras = _keras()
    keras.utils.set_random_seed(1)
    image = keras.Input((12, 12, 3))
    x = keras.layers.Conv2D(16, 3, activation="relu")(image)
    model = keras.Model(image, keras.layers.Conv2D(8, 1)(_fire(keras, x, 8, 16, "fire2")))
    path = tmp_path / "fire.tflite"
    path.write_bytes(tflite_int8(model, 12))
    assert main(["plan", str(path), "--target", "stm32h747", "--no-record"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("concat ")]
    assert len(lines) == 1 and ": in place (channel slices" in lines[0]
    assert "fire2_expand1x1" in lines[0] and "fire2_expand3x3" in lines[0]
    in_place = deploy(path, DeploymentOptions(target="stm32h747")).plan
    copying = deploy(path, DeploymentOptions(target="stm32h747", concat_in_place=False)).plan
    # 10 x 10 pixels: in place, the 32-channel concat and the 8-channel squeeze (+ work buffer);
    # copying, both 16-channel expands beside the concat, which may overlap the one that dies
    assert 10 * 10 * (32 + 8) <= in_place.arena_bytes < copying.arena_bytes
    assert sorted(in_place.channel_strides.values()) == [32, 32]   # both expands write 32-channel pixels
