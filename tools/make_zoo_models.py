"""Build vendor-zoo-style int8 TFLite models (Keras, random weights, TFLite converter) for
memory-planning studies: SqueezeNet 1.1 and MobileNetV2 0.35.

    python tools/make_zoo_models.py OUT_DIR [--sizes 224 128] [--models squeezenet11 mobilenetv2_035]
    squeezenet11_keras(size=224, classes=1000) -> tf.keras.Model
    mobilenetv2_035_keras(size=224, classes=1000) -> tf.keras.Model
    tflite_int8(model, size, samples=2, seed=0) -> bytes

SqueezeNet 1.1 (Iandola et al. 2016, the 1.1 revision): conv 3x3 / 2 with 64 channels +
ReLU, max pool 3x3 / 2, fire(16, 64) x2, max pool, fire(32, 128) x2, max pool, fire(48, 192)
x2, fire(64, 256) x2, conv 1x1 to the classes + ReLU, global average pool, softmax; a fire
module ``fire(s, e)`` is squeeze conv 1x1 (s channels) + ReLU, then expand conv 1x1 (e) +
ReLU and expand conv 3x3 'same' (e) + ReLU, concatenated on the channel axis (2e channels).
Convs and pools use 'valid' padding as the reference implementation: at 224 the first
tensor is 111 x 111 x 64. MobileNetV2 0.35 is ``tf.keras.applications.MobileNetV2(alpha=
0.35, weights=None)``: at 224 its largest tensor is block 1's expansion, 112 x 112 x 48 =
602,112 bytes in int8.

Quantization: the TFLite converter's full-integer post-training quantization
(``Optimize.DEFAULT`` + a representative dataset of ``samples`` uniform random images,
int8 input and output): the file is what a model zoo ships. The weights are seeded random
(the classifier scaled to logits of a trained network's spread, :func:`spread_logits`): the
models are for memory and MACC studies, not accuracy.
"""
from __future__ import annotations

import argparse
import logging
from pathlib import Path

import numpy as np

log = logging.getLogger("make_zoo_models")
FIRES = ((16, 64), (16, 64), "pool", (32, 128), (32, 128), "pool", (48, 192), (48, 192), (64, 256), (64, 256))


def _keras():
    import tf_keras
    return tf_keras


def _fire(keras, x, squeeze: int, expand: int, name: str):
    layers = keras.layers
    s = layers.Conv2D(squeeze, 1, activation="relu", name=f"{name}_squeeze")(x)
    left = layers.Conv2D(expand, 1, activation="relu", name=f"{name}_expand1x1")(s)
    right = layers.Conv2D(expand, 3, padding="same", activation="relu", name=f"{name}_expand3x3")(s)
    return layers.Concatenate(axis=-1, name=f"{name}_concat")([left, right])


def squeezenet11_keras(size: int = 224, classes: int = 1000, seed: int = 0):
    """SqueezeNet 1.1 as a Keras functional model (module docstring)."""
    keras = _keras()
    keras.utils.set_random_seed(seed)
    layers = keras.layers
    image = keras.Input((size, size, 3), name="input")
    x = layers.Conv2D(64, 3, strides=2, activation="relu", name="conv1")(image)
    x = layers.MaxPooling2D(3, strides=2, name="pool1")(x)
    fire_index, pool_index = 2, 3
    for fire in FIRES:
        if fire == "pool":
            x = layers.MaxPooling2D(3, strides=2, name=f"pool{pool_index}")(x)
            pool_index += 2
            continue
        x = _fire(keras, x, *fire, name=f"fire{fire_index}")
        fire_index += 1
    x = layers.Conv2D(classes, 1, activation="relu", name="conv10")(x)
    x = layers.GlobalAveragePooling2D(name="pool10")(x)
    output = layers.Softmax(name="softmax")(x)
    return keras.Model(image, output, name=f"squeezenet11_{size}")


def mobilenetv2_035_keras(size: int = 224, classes: int = 1000, seed: int = 0):
    """MobileNetV2 with width multiplier 0.35, random weights (module docstring)."""
    keras = _keras()
    keras.utils.set_random_seed(seed)
    return keras.applications.MobileNetV2(input_shape=(size, size, 3), alpha=0.35, weights=None,
                                          classes=classes)


BUILDERS = {"squeezenet11": squeezenet11_keras, "mobilenetv2_035": mobilenetv2_035_keras}
LOGIT_SPREAD = 4.0


def spread_logits(model, size: int, seed: int = 0) -> None:
    """Scale the classifier (the last layer with weights: SqueezeNet's conv10, MobileNetV2's
    dense) so that the logits on random images have standard deviation ``LOGIT_SPREAD``, as a
    trained classifier's do. With random weights they are ~1e-3 wide, and the Softmax's
    input scale then needs a multiplier below 1, which TFLite's integer Softmax (and
    mcudeploy's) does not take. ReLU and the global pool are positively homogeneous, so
    scaling the classifier's kernel and bias scales the logits by the same factor."""
    keras = _keras()
    images = np.random.default_rng(seed).uniform(-1, 1, (4, size, size, 3)).astype(np.float32)
    classifier = [layer for layer in model.layers if layer.get_weights()][-1]
    features = keras.Model(model.input, classifier.input)(images).numpy()
    kernel, bias = classifier.get_weights()
    # a dense layer's (C, K) kernel or a 1x1 conv's (1, 1, C, K): logits per image / per pixel
    logits = features.reshape(-1, kernel.shape[-2]) @ kernel.reshape(-1, kernel.shape[-1]) + bias
    factor = LOGIT_SPREAD / max(float(logits.std()), 1e-12)
    classifier.set_weights([kernel * factor, bias * factor])


def tflite_int8(model, size: int, samples: int = 2, seed: int = 0) -> bytes:
    """Full-integer TFLite flatbuffer of ``model`` (int8 weights, activations, input, output)."""
    import tensorflow as tf
    rng = np.random.default_rng(seed)

    def representative():
        for _ in range(samples):
            yield [rng.uniform(-1, 1, (1, size, size, 3)).astype(np.float32)]

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    return converter.convert()


def build(name: str, size: int, output: Path) -> Path:
    """Write ``OUT/<name>_<size>_int8.tflite`` and return its path."""
    path = output / f"{name}_{size}_int8.tflite"
    model = BUILDERS[name](size)
    spread_logits(model, size)
    path.write_bytes(tflite_int8(model, size))
    log.info("wrote %s", path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--sizes", type=int, nargs="+", default=[224])
    parser.add_argument("--models", nargs="+", choices=sorted(BUILDERS), default=sorted(BUILDERS))
    arguments = parser.parse_args()
    arguments.output.mkdir(parents=True, exist_ok=True)
    for name in arguments.models:
        for size in arguments.sizes:
            build(name, size, arguments.output)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    main()
