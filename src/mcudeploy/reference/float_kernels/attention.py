"""Attention (ONNX opset 23) in float64: split 3-D inputs into heads, append the cache,
repeat kv heads for grouped queries, ``A = (sqrt(s) Q)(sqrt(s) K)^T + bias``, optional
soft-cap, softmax over the last axis, ``Y = softmax(A) V`` (see the opdef for every term)."""
from __future__ import annotations

import numpy as np

from ...ir import Node
from ...ir.opdefs.attention import heads_view
from ._common import output_dtype, wide
from .registry import kernel


def _to_heads(array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``[B, S, H * D]`` -> ``[B, H, S, D]`` (4-D arrays pass through)."""
    if array.ndim == 4:
        return array
    return array.reshape(shape[0], shape[2], shape[1], shape[3]).transpose(0, 2, 1, 3)


def _bias(node: Node, mask: np.ndarray | None, query_length: int, total: int,
          past: int) -> np.ndarray:
    bias = np.zeros((query_length, total))
    if mask is not None:
        if mask.dtype == np.bool_:
            mask = np.where(mask, 0.0, -np.inf)
        mask = wide(mask)
        missing = total - mask.shape[-1]
        if missing > 0:
            mask = np.pad(mask, [(0, 0)] * (mask.ndim - 1) + [(0, missing)], constant_values=-np.inf)
        bias = bias + mask
    if node.attrs["is_causal"]:
        rows = np.arange(query_length)[:, None]
        bias = bias + np.where(np.arange(total)[None, :] > rows + past, -np.inf, 0.0)
    return bias


@kernel("Attention")
def attention(node: Node, inputs: list) -> list[np.ndarray]:
    q_value, k_value, v_value = node.inputs[:3]
    shapes = heads_view(q_value, k_value, v_value, node.attrs)
    q, k, v = (_to_heads(wide(a), s) for a, s in zip(inputs[:3], shapes))
    mask, past_key, past_value, lengths = (list(inputs[3:]) + [None] * 4)[:4]
    present_key = k if past_key is None else np.concatenate([wide(past_key), k], axis=2)
    present_value = v if past_value is None else np.concatenate([wide(past_value), v], axis=2)
    repeat = q.shape[1] // k.shape[1]
    keys, values = (np.repeat(a, repeat, axis=1) for a in (present_key, present_value))
    scale = node.attrs["scale"] if node.attrs["scale"] is not None else 1.0 / np.sqrt(q.shape[3])
    root = np.sqrt(scale)
    scores = np.matmul(q * root, np.swapaxes(keys * root, 2, 3))
    past = 0 if past_key is None else past_key.shape[2]
    with np.errstate(all="ignore"):
        biased = scores + _bias(node, mask, q.shape[2], keys.shape[2], past)
        if lengths is not None:
            padding = np.arange(keys.shape[2])[None, :] >= np.asarray(lengths).reshape(-1, 1)
            biased = biased + np.where(padding, -np.inf, 0.0)[:, None, None, :]
        capped = biased
        if node.attrs["softcap"] > 0:
            capped = node.attrs["softcap"] * np.tanh(biased / node.attrs["softcap"])
        shifted = np.exp(capped - capped.max(axis=-1, keepdims=True))
        weights = shifted / shifted.sum(axis=-1, keepdims=True)
    y = np.matmul(weights, values)
    if q_value.rank == 3:
        y = y.transpose(0, 2, 1, 3).reshape(node.outputs[0].shape)
    qk = (scores, biased, capped, weights)[node.attrs["qk_matmul_output_mode"]]
    return [a.astype(output_dtype(node, i)) for i, a in enumerate((y, present_key, present_value, qk))]
