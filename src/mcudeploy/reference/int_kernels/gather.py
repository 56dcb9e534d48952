"""Integer Gather (TFLite GATHER), Tile and Expand (BROADCAST_TO): raw integers are copied, so the output shares
the input's scale and zero point (prepare checks). Gather's indices may be a computed
int32 / int64 tensor; negative ones count from the end of the axis, others outside the
axis are a :class:`DataError` (TFLM refuses them too). Axes shift by one for the batch."""
from __future__ import annotations

import numpy as np

from ...errors import UnsupportedError
from ...ir import Node
from ..float_kernels.gather import normalized
from ._common import per_tensor, where
from .registry import int_kernel


def prepare_copy(node: Node) -> None:
    """The output keeps the input's quantization (a raw copy)."""
    x, out = node.inputs[0], node.outputs[0]
    if x.quant is not None or out.quant is not None:
        if per_tensor(node, x, "input") != per_tensor(node, out, "output"):
            raise UnsupportedError(f"{where(node)}: input and output quantization differ; the "
                                   f"integer {node.op} copies raw integers (requantize separately)")
    return None


@int_kernel("Gather", prepare=prepare_copy)
def gather(node: Node, params, inputs: list) -> list[np.ndarray]:
    x, indices = inputs
    axis = node.attrs["axis"] % (x.ndim - 1)
    if indices.shape[0] == 1:
        index = normalized(node, indices[0], x.shape[1 + axis])
        return [np.take(x, index, axis=1 + axis)]
    parts = [np.take(x[b % x.shape[0]], normalized(node, indices[b], x.shape[1 + axis]), axis=axis)
             for b in range(indices.shape[0])]
    return [np.stack(parts)]


@int_kernel("Tile", prepare=prepare_copy)
def tile(node: Node, params, inputs: list) -> list[np.ndarray]:
    return [np.tile(inputs[0], (1,) + tuple(node.attrs["repeats"]))]


@int_kernel("Expand", prepare=prepare_copy)
def expand(node: Node, params, inputs: list) -> list[np.ndarray]:
    """TFLite BROADCAST_TO (and FILL): the raw integers broadcast to the output shape."""
    x, shape = inputs[0], node.outputs[0].shape
    x = x.reshape(x.shape[:1] + (1,) * (len(shape) + 1 - x.ndim) + x.shape[1:])
    return [np.broadcast_to(x, x.shape[:1] + shape)]
