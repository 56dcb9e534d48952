"""Small Keras models, one per layer family, and the application architectures the Keras
importer is checked on (``tests/test_import_keras.py``, ``benchmarks/keras_import_bench.py``).

Each builder takes the Keras module (``tf_keras`` for tf.keras 2.x files, ``keras`` for
Keras 3) and TensorFlow (for the tf.* operations tf.keras records as TFOpLambda) and returns
a model; :func:`randomize` gives every weight a seeded value (BN statistics included, so
that folding is exercised), scaled by fan-in so deep nets keep their outputs in range.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

Builder = Callable[[Any, Any], Any]


def randomize(model: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = []
    for weight in model.weights:
        name, shape = weight.name, tuple(weight.shape)
        if "moving" not in name and any(t in name for t in ("mean", "variance", "count")):
            values.append(np.asarray(weight))   # adapted Normalization statistics: Keras 3
            continue                            # caches them at adapt(), keep them consistent
        if "variance" in name:
            values.append(rng.uniform(0.5, 1.5, shape))
        elif "gamma" in name:
            values.append(rng.uniform(0.6, 1.4, shape))
        elif len(shape) > 1:
            fan_in = int(np.prod(shape[:-1])) if "depthwise" not in name else int(np.prod(shape[:2]))
            values.append(rng.normal(0.0, 1.0, shape) / np.sqrt(max(fan_in, 1)))
        else:
            values.append(rng.normal(0.0, 0.2, shape))
    model.set_weights([v.astype(np.float32) for v in values])


def _chain(k: Any, shape: tuple[int, ...], layers: list[Any]) -> Any:
    inputs = k.Input(shape, name="x")
    y = inputs
    for layer in layers:
        y = layer(y)
    return k.Model(inputs, y)


def conv(k: Any, tf: Any) -> Any:
    x = k.Input((9, 9, 4), name="x")
    a = k.layers.Conv2D(6, 3, strides=2, padding="same", activation="relu", name="strided")(x)
    b = k.layers.Conv2D(8, 3, padding="same", groups=2, dilation_rate=2, activation="relu6",
                        name="grouped_dilated")(x)
    c = k.layers.Conv2D(5, (3, 2), padding="valid", use_bias=False, activation="sigmoid", name="valid")(b)
    d = k.layers.DepthwiseConv2D(3, depth_multiplier=2, strides=2, padding="same", name="depthwise")(x)
    e = k.layers.SeparableConv2D(6, 3, padding="same", depth_multiplier=2, activation="tanh",
                                 name="separable")(x)
    f = k.layers.Conv2DTranspose(5, 3, strides=2, padding="same", name="transposed_same")(x)
    g = k.layers.Conv2DTranspose(4, (3, 2), strides=(2, 1), activation="relu", name="transposed_valid")(x)
    h = k.layers.Conv2DTranspose(3, 2, strides=3, padding="same", name="transposed_sparse")(x)
    return k.Model(x, [a, c, d, e, f, g, h])


def temporal(k: Any, tf: Any) -> Any:
    """1-D layers on [N, L, C] sequences (audio / sensor models)."""
    x = k.Input((20, 3), name="x")
    a = k.layers.Conv1D(6, 3, strides=2, padding="same", activation="relu", name="conv_same")(x)
    b = k.layers.Conv1D(4, 3, dilation_rate=2, padding="causal", name="conv_causal")(x)
    c = k.layers.Conv1D(4, 5, groups=1, activation="tanh", name="conv_valid")(k.layers.ZeroPadding1D((1, 2), name="pad")(x))
    d = k.layers.MaxPooling1D(3, strides=2, padding="same", name="max_pool")(a)
    e = k.layers.AveragePooling1D(2, name="avg_pool")(b)
    f = k.layers.GlobalAveragePooling1D(name="gap")(c)
    g = k.layers.GlobalMaxPooling1D(keepdims=True, name="gmp")(k.layers.Cropping1D((2, 1), name="crop")(b))
    return k.Model(x, [d, e, f, g])


def dense_batchnorm(k: Any, tf: Any) -> Any:
    x = k.Input((6, 6, 3), name="x")
    y = k.layers.Conv2D(4, 3, name="conv")(x)
    y = k.layers.BatchNormalization(name="bn")(y)
    y = k.layers.ReLU(name="relu")(y)
    z = k.layers.Dense(5, activation="softmax", name="dense_rank4")(y)
    f = k.layers.Flatten(name="flatten")(y)
    f = k.layers.Dense(7, activation="swish", name="dense")(f)
    f = k.layers.BatchNormalization(center=False, name="bn_dense")(f)
    return k.Model(x, [z, f])


def activations(k: Any, tf: Any, names: tuple[str, ...]) -> Any:
    x = k.Input((4, 4, 3), name="x")
    y = k.layers.Conv2D(4, 1, name="conv")(x)
    outs = [k.layers.Activation(n, name=f"act_{n}")(y) for n in names]
    outs += [k.layers.ReLU(name="relu")(y), k.layers.ReLU(max_value=6.0, name="relu_max")(y),
             k.layers.ReLU(negative_slope=0.1, name="relu_slope")(y),
             k.layers.LeakyReLU(0.2, name="leaky")(y), k.layers.PReLU(name="prelu")(y),
             k.layers.PReLU(shared_axes=[1, 2], name="prelu_shared")(y),
             k.layers.Softmax(name="softmax")(y)]
    return k.Model(x, outs)


def merges(k: Any, tf: Any) -> Any:
    a, b = k.Input((4, 4, 3), name="a"), k.Input((4, 4, 3), name="b")
    c = k.layers.Conv2D(3, 1, name="conv")(a)
    outs = [k.layers.Add(name="add")([a, b, c]), k.layers.Multiply(name="multiply")([a, b]),
            k.layers.Concatenate(name="concat")([a, b, c]), k.layers.Subtract(name="subtract")([a, c]),
            k.layers.Average(name="average")([a, b, c]), k.layers.Maximum(name="maximum")([a, b]),
            k.layers.Minimum(name="minimum")([b, c])]
    return k.Model([a, b], outs)


def pooling(k: Any, tf: Any) -> Any:
    x = k.Input((9, 10, 3), name="x")
    p = k.layers.ZeroPadding2D(((1, 2), (0, 1)), name="pad")(x)
    outs = [k.layers.MaxPooling2D(3, strides=2, padding="same", name="max_same")(p),
            k.layers.AveragePooling2D(2, name="avg")(x),
            k.layers.AveragePooling2D(3, strides=1, padding="same", name="avg_same")(x),
            k.layers.GlobalAveragePooling2D(keepdims=True, name="gap_keep")(x),
            k.layers.GlobalAveragePooling2D(name="gap")(x),
            k.layers.GlobalMaxPooling2D(name="gmp")(x)]
    return k.Model(x, outs)


def reshaping(k: Any, tf: Any) -> Any:
    x = k.Input((6, 4, 3), name="x")
    y = k.layers.Dropout(0.5, name="dropout")(x)
    y = k.layers.SpatialDropout2D(0.5, name="spatial_dropout")(y)
    y = k.layers.GaussianNoise(0.3, name="noise")(y)
    outs = [k.layers.Reshape((-1, 4), name="reshape")(y), k.layers.Flatten(name="flatten")(y),
            k.layers.Permute((2, 1, 3), name="permute")(y),
            k.layers.Cropping2D(((1, 0), (2, 1)), name="crop")(y),
            k.layers.UpSampling2D(2, name="up_nearest")(y),
            k.layers.UpSampling2D((2, 3), interpolation="bilinear", name="up_bilinear")(y)]
    return k.Model(x, outs)


def rescaling(k: Any, tf: Any) -> Any:
    x = k.Input((4, 4, 3), name="x")
    y = k.layers.Rescaling(1 / 127.5, offset=-1.0, name="rescale")(x)
    y = k.layers.Normalization(mean=[0.1, -0.2, 0.3], variance=[0.5, 2.0, 1.5], name="norm")(y)
    adapted = k.layers.Normalization(name="norm_adapted")
    adapted.adapt(np.random.default_rng(3).normal(1.0, 2.0, (16, 4, 4, 3)).astype(np.float32))
    return k.Model(x, adapted(y))


def nested(k: Any, tf: Any) -> Any:
    inner_in = k.Input((6, 6, 4), name="inner_x")
    z = k.layers.Conv2D(4, 3, padding="same", name="inner_conv")(inner_in)
    z = k.layers.BatchNormalization(name="inner_bn")(z)
    inner = k.Model(inner_in, z, name="block")
    head = k.Sequential([k.Input((6, 6, 4)), k.layers.GlobalAveragePooling2D(name="head_gap"),
                         k.layers.Dense(3, name="head_dense")], name="head")
    x = k.Input((6, 6, 3), name="x")
    y = k.layers.Conv2D(4, 1, name="stem")(x)
    y = k.layers.Add(name="residual")([inner(y), y])
    return k.Model(x, head(y))


def tf_ops(k: Any, tf: Any) -> Any:
    """tf.* operations and slicing on Keras tensors (tf.keras records TFOpLambda and
    SlicingOpLambda layers)."""
    x = k.Input((6, 6, 4), name="x")
    y = k.layers.Conv2D(6, 1, name="conv")(x)
    a = tf.math.multiply(y, 2.0) + x[:, :, :, 1:3][..., :1]
    b = 2.0 - y / 3.0
    c = tf.nn.relu6(tf.concat([a, b], axis=-1))
    d = tf.math.reduce_mean(c, axis=[1, 2], keepdims=True)
    e = tf.math.sigmoid(d) * c
    f = tf.reshape(tf.transpose(e, [0, 2, 1, 3]), [-1, 6 * 6 * 12])
    g = tf.nn.silu(y[:, 1:5, 0, :]) - tf.compat.v1.nn.relu(y[:, 1:5, 1, :])
    h = tf.math.maximum(tf.math.square(y), tf.nn.leaky_relu(y, alpha=0.1))
    return k.Model(x, [f, g, h])


def keras_ops(k: Any, tf: Any) -> Any:
    """keras.ops calls and Python arithmetic on Keras 3 tensors (operation layers)."""
    ops = k.ops
    x = k.Input((4, 4, 6), name="x")
    y = k.layers.Conv2D(6, 1, name="conv")(x)
    a = ops.mean(y, axis=[1, 2], keepdims=True)
    b = ops.reshape(ops.concatenate([y, x * 2.0], axis=-1), (-1, 4 * 4 * 12))
    c = ops.transpose(y, (0, 2, 1, 3))[:, 1:3, :, 0:2]
    d = ops.relu6(y) - ops.silu(y) + 1.0 / (1.0 + ops.exp(-y)) + ops.sqrt(ops.abs(y)) / 2
    e = ops.maximum(ops.sigmoid(a), 0.1) * y[..., 1:2]
    return k.Model(x, [b, c, d, e])


def resnet_style(k: Any, tf: Any) -> Any:
    """ResNet50's stem and bottleneck blocks (1x1 - 3x3 - 1x1, projection shortcut), small."""
    x = k.Input((32, 32, 3), name="x")
    y = k.layers.ZeroPadding2D(3, name="conv1_pad")(x)
    y = k.layers.Conv2D(16, 7, strides=2, name="conv1_conv")(y)
    y = k.layers.BatchNormalization(epsilon=1.001e-5, name="conv1_bn")(y)
    y = k.layers.Activation("relu", name="conv1_relu")(y)
    y = k.layers.ZeroPadding2D(1, name="pool1_pad")(y)
    y = k.layers.MaxPooling2D(3, strides=2, name="pool1_pool")(y)
    for block, (filters, stride) in enumerate([(8, 1), (8, 1), (16, 2)]):
        name = f"block{block}"
        shortcut = y
        if block in (0, 2):
            shortcut = k.layers.Conv2D(4 * filters, 1, strides=stride, name=f"{name}_0_conv")(y)
            shortcut = k.layers.BatchNormalization(name=f"{name}_0_bn")(shortcut)
        z = k.layers.Conv2D(filters, 1, strides=stride, name=f"{name}_1_conv")(y)
        z = k.layers.BatchNormalization(name=f"{name}_1_bn")(z)
        z = k.layers.Activation("relu", name=f"{name}_1_relu")(z)
        z = k.layers.Conv2D(filters, 3, padding="same", name=f"{name}_2_conv")(z)
        z = k.layers.BatchNormalization(name=f"{name}_2_bn")(z)
        z = k.layers.Activation("relu", name=f"{name}_2_relu")(z)
        z = k.layers.Conv2D(4 * filters, 1, name=f"{name}_3_conv")(z)
        z = k.layers.BatchNormalization(name=f"{name}_3_bn")(z)
        y = k.layers.Add(name=f"{name}_add")([shortcut, z])
        y = k.layers.Activation("relu", name=f"{name}_out")(y)
    y = k.layers.GlobalAveragePooling2D(name="avg_pool")(y)
    return k.Model(x, k.layers.Dense(10, activation="softmax", name="predictions")(y))


def mobilenet(k: Any, tf: Any, size: int = 32, alpha: float = 0.25) -> Any:
    return k.applications.MobileNet(input_shape=(size, size, 3), alpha=alpha, weights=None, classes=10)


def mobilenet_v2(k: Any, tf: Any, size: int = 32, alpha: float = 0.35) -> Any:
    return k.applications.MobileNetV2(input_shape=(size, size, 3), alpha=alpha, weights=None, classes=10)


def mobilenet_v3_small(k: Any, tf: Any, size: int = 32) -> Any:
    """Layer names with ``/`` (``Conv/BatchNorm``), hard-swish as tf-op arithmetic."""
    return k.applications.MobileNetV3Small(input_shape=(size, size, 3), alpha=0.75, weights=None, classes=10)


def efficientnet_b0(k: Any, tf: Any, size: int = 32) -> Any:
    return k.applications.EfficientNetB0(input_shape=(size, size, 3), weights=None, classes=10)


TF_KERAS_ACTIVATIONS = ("relu", "relu6", "sigmoid", "softmax", "tanh", "swish", "silu", "hard_sigmoid",
                        "linear", "elu", "selu", "softplus", "softsign", "exponential", "gelu")
KERAS3_ACTIVATIONS = TF_KERAS_ACTIVATIONS + ("hard_swish", "hard_silu")

BOTH = ("tf_keras", "keras3")
# name -> (builder, the Keras flavours that build it: TFOpLambda is tf.keras 2 only, operation
# layers Keras 3 only)
LAYER_MODELS: dict[str, tuple[Callable[..., Any], tuple[str, ...]]] = {
    "conv": (conv, BOTH), "temporal": (temporal, BOTH), "dense_batchnorm": (dense_batchnorm, BOTH), "merges": (merges, BOTH),
    "pooling": (pooling, BOTH), "reshaping": (reshaping, BOTH), "rescaling": (rescaling, BOTH),
    "nested": (nested, BOTH), "tf_ops": (tf_ops, ("tf_keras",)), "keras_ops": (keras_ops, ("keras3",)),
}
APPLICATIONS: dict[str, Callable[..., Any]] = {
    "mobilenet": mobilenet, "mobilenet_v2": mobilenet_v2, "mobilenet_v3_small": mobilenet_v3_small,
    "resnet_style": resnet_style, "efficientnet_b0": efficientnet_b0,
}
