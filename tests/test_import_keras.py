"""The Keras importer (``.h5`` of tf.keras 2.x and Keras 3, ``.keras`` zips) against Keras's
own forward pass: every layer family, nested and Sequential models, TFOpLambda /
SlicingOpLambda arithmetic, application architectures (weights=None, seeded values), and
the refusals of bad files. Tolerance: max |ours - Keras| <= 1e-4 x the output's range, per
output. The references (tf_keras, keras) are test-only; the importer reads h5py alone.
"""
from __future__ import annotations

import numpy as np
import pytest

import keras_models
from conftest import require
from mcudeploy.cli.main import main as cli_main
from mcudeploy.errors import ModelFormatError, UnsupportedError
from mcudeploy.importers import load_model
from mcudeploy.ir import verify
from mcudeploy.reference import run_float

RELATIVE_TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def references():
    """(tf_keras, keras 3, tensorflow)."""
    tf = require("tensorflow")
    return require("tf_keras"), require("keras"), tf


@pytest.fixture(scope="module")
def saved(references, tmp_path_factory):
    """``saved(name, flavour, container)`` -> (model, path): built once per module."""
    folder, cache = tmp_path_factory.mktemp("keras_models"), {}
    builders = {**{n: b for n, (b, _) in keras_models.LAYER_MODELS.items()}, **keras_models.APPLICATIONS,
                "activations": None}

    def make(name: str, flavour: str, container: str):
        key = (name, flavour)
        if key not in cache:
            k = references[0] if flavour == "tf_keras" else references[1]
            if name == "activations":
                names = keras_models.TF_KERAS_ACTIVATIONS if flavour == "tf_keras" else keras_models.KERAS3_ACTIVATIONS
                model = keras_models.activations(k, references[2], names)
            else:
                model = builders[name](k, references[2])
            keras_models.randomize(model, seed=len(cache))
            cache[key] = model
        path = folder / f"{name}_{flavour}.{container}"
        if not path.exists():
            cache[key].save(path)
        return cache[key], path
    return make


def compare(model, path, seed: int = 0, input_shapes=None) -> float:
    """Import ``path``, run both engines on one seeded sample; the worst error / range."""
    graph = load_model(path, input_shapes=input_shapes)
    verify(graph)
    rng = np.random.default_rng(seed)
    feeds = {v.name: rng.normal(0.0, 1.0, v.shape).astype(np.float32) for v in graph.inputs}
    arguments = [feeds[v.name] for v in graph.inputs]
    expected = model(arguments if len(arguments) > 1 else arguments[0], training=False)
    expected = [np.asarray(e) for e in (expected if isinstance(expected, (list, tuple)) else [expected])]
    ours = run_float(graph, feeds)
    assert len(expected) == len(graph.outputs)
    worst = 0.0
    for value, reference in zip(graph.outputs, expected):
        got = ours[value.name]
        assert got.shape == reference.shape, value.name
        scale = max(float(reference.max() - reference.min()), 1e-6)
        error = float(np.max(np.abs(got - reference))) / scale
        assert error <= RELATIVE_TOLERANCE, f"{path.name} output {value.name}: {error:.2e} of the range"
        worst = max(worst, error)
    return worst


LAYER_CASES = [(name, flavour, container) for name, (_, flavours) in keras_models.LAYER_MODELS.items()
               for flavour, container in [("tf_keras", "h5"), ("keras3", "keras"), ("keras3", "h5")]
               if flavour in flavours]
LAYER_CASES += [("activations", f, c) for f, c in [("tf_keras", "h5"), ("keras3", "keras")]]
LAYER_CASES += [("conv", "tf_keras", "keras"), ("nested", "tf_keras", "keras")]


@pytest.mark.parametrize("name,flavour,container", LAYER_CASES)
def test_layer_models_match_keras(saved, name, flavour, container):
    compare(*saved(name, flavour, container))


def test_node_names_are_keras_layer_names_and_nhwc_stays(saved):
    _, path = saved("conv", "tf_keras", "h5")
    graph = load_model(path)
    names = {node.name for node in graph.nodes}
    assert {"strided", "grouped_dilated", "valid", "depthwise", "separable/depthwise", "separable"} <= names
    assert not any(node.op == "Transpose" for node in graph.nodes)
    convs = {node.name: node for node in graph.nodes if node.op == "Conv"}
    assert all(node.attrs["layout"] == "NHWC" for node in convs.values())
    assert convs["grouped_dilated"].attrs["group"] == 2 and convs["depthwise"].attrs["group"] == 4
    assert convs["strided"].attrs["activation_min"] == 0.0          # relu fused as a clamp
    assert graph.inputs[0].shape == (1, 9, 9, 4) and graph.metadata["format"] == "keras"


def test_format_is_detected_from_the_bytes_and_analyze_shows_layer_names(saved, tmp_path, capsys):
    for flavour, container, name in (("tf_keras", "h5", "model.dat"), ("keras3", "keras", "model.bin")):
        renamed = tmp_path / name
        renamed.write_bytes(saved("conv", flavour, container)[1].read_bytes())
        assert load_model(renamed).metadata["format"] == "keras"
        capsys.readouterr()
        assert cli_main(["analyze", str(renamed)]) == 0
        out = capsys.readouterr().out
        assert "(keras)" in out and "grouped_dilated" in out and "separable/depthwise" in out


def test_training_only_layers_leave_no_node(saved):
    graph = load_model(saved("reshaping", "tf_keras", "h5")[1])
    assert not {"dropout", "spatial_dropout", "noise"} & {node.name for node in graph.nodes}


def test_nested_models_are_inlined_by_path(saved):
    graph = load_model(saved("nested", "keras3", "keras")[1])
    names = {node.name for node in graph.nodes}
    assert {"block/inner_conv", "block/inner_bn", "head/head_dense", "residual"} <= names


def test_sequential_shared_layer_and_free_dimensions(references, tmp_path, capsys):
    k = references[0]
    chain = k.Sequential([k.layers.Dense(5, activation="relu", input_shape=(4,), name="first"),
                          k.layers.Dense(2, name="second")])
    x = k.Input((6,), name="x")
    shared = k.layers.Dense(6, activation="tanh", name="shared")
    twice = k.Model(x, shared(shared(x)))
    image = k.Input((None, None, 3), name="image")
    free = k.Model(image, k.layers.Conv2D(4, 3, padding="same", name="conv")(image))
    paths = {}
    for name, model in (("chain", chain), ("twice", twice), ("free", free)):
        keras_models.randomize(model, seed=2)
        paths[name] = tmp_path / f"{name}.h5"
        model.save(paths[name])
    compare(chain, paths["chain"])
    compare(twice, paths["twice"])
    assert [node.name for node in load_model(paths["twice"]).nodes] == ["shared", "shared/tanh",
                                                                          "shared_call1", "shared_call1/tanh"]
    _analyze_fails(paths["free"], capsys, UnsupportedError.exit_code, "'image'", "--input-shape image=1,1,1,3")
    compare(free, paths["free"], input_shapes={"image": (1, 7, 5, 3)})


@pytest.mark.parametrize("name,flavour,container", [
    ("mobilenet", "tf_keras", "h5"), ("mobilenet_v2", "tf_keras", "h5"), ("resnet_style", "tf_keras", "h5"),
    ("mobilenet_v2", "keras3", "keras"), ("resnet_style", "keras3", "h5"),
    ("mobilenet_v3_small", "tf_keras", "h5"), ("mobilenet_v3_small", "keras3", "keras")])
def test_applications_match_keras(saved, name, flavour, container):
    compare(*saved(name, flavour, container))


def test_cleanup_folds_batchnorm_and_fuses_relu6_without_transposes(saved):
    """MobileNetV2 after the integer-forms pipeline: BN folded into the Convs, ReLU6 fused as
    their clamps, no Transpose anywhere (Keras is NHWC from the start); still Keras's output."""
    from mcudeploy.passes.pipelines import integer_forms, run_pipeline
    model, path = saved("mobilenet_v2", "tf_keras", "h5")
    graph = load_model(path)
    run_pipeline(graph, integer_forms())
    ops = {node.op for node in graph.nodes}
    assert not ops & {"BatchNormalization", "Clip", "Transpose"}, ops
    assert graph.node("Conv1").attrs["activation_max"] == 6.0
    x = np.random.default_rng(0).normal(size=graph.inputs[0].shape).astype(np.float32)
    expected = np.asarray(model(x, training=False))
    got = run_float(graph, {graph.inputs[0].name: x})[graph.outputs[0].name]
    assert np.max(np.abs(got - expected)) <= RELATIVE_TOLERANCE * np.ptp(expected)


@pytest.mark.slow
@pytest.mark.parametrize("flavour,container", [("tf_keras", "h5"), ("keras3", "keras")])
def test_efficientnet_b0_matches_keras(saved, flavour, container):
    model, path = saved("efficientnet_b0", flavour, container)
    compare(model, path)
    ops = {node.op for node in load_model(path).nodes}
    assert {"Sigmoid", "Mul", "ReduceMean"} <= ops           # swish and squeeze-excite


# -- bad input ------------------------------------------------------------------------------

def _analyze_fails(path, capsys, code: int, *needles: str) -> None:
    assert cli_main(["analyze", str(path)]) == code
    message = capsys.readouterr().err.strip()
    assert len(message.splitlines()) == 1 and "Traceback" not in message, message
    for needle in needles:
        assert needle in message, message


def test_corrupt_and_truncated_hdf5(saved, tmp_path, capsys):
    corrupt = tmp_path / "corrupt.h5"
    corrupt.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(np.random.default_rng(0).integers(0, 256, 4000, np.uint8)))
    _analyze_fails(corrupt, capsys, ModelFormatError.exit_code, "corrupt.h5", "HDF5")
    data = saved("conv", "tf_keras", "h5")[1].read_bytes()
    truncated = tmp_path / "truncated.h5"
    truncated.write_bytes(data[: len(data) // 2])
    _analyze_fails(truncated, capsys, ModelFormatError.exit_code, "truncated.h5", "save the model again")
    text = tmp_path / "notes.keras"
    text.write_text("not a model")
    _analyze_fails(text, capsys, ModelFormatError.exit_code, "notes.keras")


def test_weights_without_config(saved, tmp_path, capsys):
    model, _ = saved("conv", "tf_keras", "h5")
    path = tmp_path / "weights.h5"
    model.save_weights(path)
    _analyze_fails(path, capsys, ModelFormatError.exit_code, "no model config", "model.save")


def _refused(references, tmp_path, capsys, layer, *needles: str) -> None:
    k = references[0]
    x = k.Input((4, 4, 3), name="x")
    model = k.Model(x, layer(k.layers.Conv2D(2, 1, name="conv")(x)))
    path = tmp_path / "model.h5"
    model.save(path)
    _analyze_fails(path, capsys, UnsupportedError.exit_code, *needles)


def test_lambda_is_refused_by_name(references, tmp_path, capsys):
    layer = references[0].layers.Lambda(lambda t: t * 2.0, name="times_two")
    _refused(references, tmp_path, capsys, layer, "'times_two'", "Lambda", "TFLite")


def test_unknown_layer_is_refused_by_name(references, tmp_path, capsys):
    layer = references[0].layers.LayerNormalization(name="norm")
    _refused(references, tmp_path, capsys, layer, "'norm'", "LayerNormalization", "not supported")


def test_custom_layer_class_is_refused_by_name(references, tmp_path, capsys):
    k = references[0]

    @k.utils.register_keras_serializable(package="Mine")
    class Doubler(k.layers.Layer):
        def call(self, inputs):
            return inputs * 2.0

    _refused(references, tmp_path, capsys, Doubler(name="doubler"), "'doubler'", "Mine>Doubler", "custom")


def test_missing_h5py_names_the_extra(saved, monkeypatch):
    import sys
    path = saved("conv", "tf_keras", "h5")[1]
    monkeypatch.setitem(sys.modules, "h5py", None)
    with pytest.raises(UnsupportedError, match=r"pip install 'mcudeploy\[keras\]'"):
        load_model(path)


# -- the whole pipeline from a float Keras model ------------------------------------------

def _small_cnn(k):
    x = k.Input((16, 16, 3), name="image")
    y = k.layers.Conv2D(8, 3, strides=2, padding="same", name="stem")(x)
    y = k.layers.BatchNormalization(name="stem_bn")(y)
    y = k.layers.ReLU(6.0, name="stem_relu")(y)
    y = k.layers.DepthwiseConv2D(3, padding="same", activation="relu", name="dw")(y)
    y = k.layers.Add(name="residual")([y, k.layers.Conv2D(8, 1, name="pw")(y)])
    y = k.layers.GlobalAveragePooling2D(name="gap")(y)
    return k.Model(x, k.layers.Dense(4, activation="softmax", name="classifier")(y))


@pytest.mark.slow
def test_keras_model_quantizes_plans_generates_and_validates_on_host_and_qemu(references, tmp_path, capsys):
    import os
    import shutil
    model = _small_cnn(references[0])
    keras_models.randomize(model, seed=5)
    float_path, quantized = tmp_path / "small.h5", tmp_path / "small_int8.tflite"
    model.save(float_path)
    calibration = np.random.default_rng(1).normal(size=(16, 1, 16, 16, 3)).astype(np.float32)
    np.save(tmp_path / "calib.npy", calibration)
    assert cli_main(["quantize", str(float_path), "--calib", str(tmp_path / "calib.npy"), "-o", str(quantized)]) == 0
    assert cli_main(["plan", str(quantized)]) == 0
    assert cli_main(["generate", str(quantized), "-o", str(tmp_path / "generated")]) == 0
    assert (tmp_path / "generated").is_dir()
    capsys.readouterr()
    assert cli_main(["validate", str(float_path), "--quantized", str(quantized), "--samples", "4",
                     "--on", "host"]) == 0
    out = capsys.readouterr().out
    assert "validation: PASS" in out and "on host: bit-exact" in out
    if shutil.which("qemu-system-arm") is None and os.environ.get("CI") != "true":
        pytest.skip("qemu-system-arm is not installed")
    assert cli_main(["validate", str(quantized), "--on", "qemu-m4", "--samples", "2"]) == 0
    assert "bit-exact" in capsys.readouterr().out


@pytest.mark.parametrize("flavour,container", [("tf_keras", "h5"), ("keras3", "keras")])
def test_mutated_files_give_mcudeploy_errors_only(saved, tmp_path, flavour, container):
    """Seeded byte mutations (truncations, overwritten runs, flipped bytes) of a saved model:
    each either imports or raises an McuDeployError, never another exception."""
    from mcudeploy.errors import McuDeployError
    data = saved("nested", flavour, container)[1].read_bytes()
    rng = np.random.default_rng(7)
    outcomes = {"imported": 0, "refused": 0}
    for case in range(40):
        mutated = bytearray(data)
        if case % 3 == 0:
            mutated = mutated[: int(rng.integers(16, len(data)))]
        else:
            for _ in range(int(rng.integers(1, 6))):
                at = int(rng.integers(0, len(mutated) - 8))
                mutated[at: at + 8] = bytes(rng.integers(0, 256, 8, dtype=np.uint8))
        path = tmp_path / f"case{case}.{container}"
        path.write_bytes(bytes(mutated))
        try:
            load_model(path)
            outcomes["imported"] += 1
        except McuDeployError:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 0, outcomes


def _places(item, found=None) -> list:
    """Every (container, key) of a parsed JSON document."""
    found = [] if found is None else found
    for key in (item if isinstance(item, dict) else range(len(item))):
        found.append((item, key))
        if isinstance(item[key], (dict, list)):
            _places(item[key], found)
    return found


def test_config_values_of_other_types_give_mcudeploy_errors_only(saved, tmp_path):
    """Seeded structural mutations of the model config (a value replaced by one of another
    type, as a hand-edited or damaged file has): an McuDeployError or an import, nothing else."""
    import json
    import random
    import shutil

    import h5py

    from mcudeploy.errors import McuDeployError
    source = saved("tf_ops", "tf_keras", "h5")[1]
    with h5py.File(source, "r") as file:
        original = json.loads(file.attrs["model_config"])
    odd = [None, -1, 0, 10 ** 12, "x", [], {}, [None], {"a": 1}, 1.5, True, [1, 2, 3], "relu"]
    rnd = random.Random(3)
    for case in range(60):
        config = json.loads(json.dumps(original))
        spots = _places(config)
        for _ in range(rnd.randint(1, 3)):
            holder, key = rnd.choice(spots)
            holder[key] = rnd.choice(odd)
        path = tmp_path / f"case{case}.h5"
        shutil.copy(source, path)
        with h5py.File(path, "a") as file:
            file.attrs["model_config"] = json.dumps(config)
        try:
            load_model(path)
        except McuDeployError:
            pass
