"""Scaled dot-product attention (ONNX Attention, opset 23), with grouped-query heads, an
additive or boolean mask, a causal mask, a key / value cache and soft-capping.

Shapes (4-D form; a 3-D ``[B, S, heads * size]`` input is split into heads first, and the
output joined back): ``Q [B, Hq, Sq, D]``, ``K [B, Hkv, Skv, D]``, ``V [B, Hkv, Skv, Dv]``,
optional ``past_key [B, Hkv, P, D]`` / ``past_value [B, Hkv, P, Dv]``; ``T = P + Skv``.

MACC = ``B * Hq * Sq * T * (D + Dv)`` (the two matrix products).
"""
from __future__ import annotations

from ..registry import Attr, TensorType, op


def heads_view(q, k, v, attrs) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """The 4-D ``[B, H, S, size]`` shapes of Q, K, V (3-D inputs split into heads)."""
    if not q.rank == k.rank == v.rank or q.rank not in (3, 4):
        raise ValueError(f"Q, K, V must all be rank 3 or all rank 4, got {q.type_str()}, "
                         f"{k.type_str()}, {v.type_str()}")
    if q.rank == 4:
        return q.shape, k.shape, v.shape
    q_heads, kv_heads = attrs["q_num_heads"], attrs["kv_num_heads"]
    if q_heads <= 0 or kv_heads <= 0 or q.shape[2] % q_heads or k.shape[2] % kv_heads \
            or v.shape[2] % kv_heads:
        raise ValueError(f"3-D attention needs q_num_heads / kv_num_heads dividing the hidden "
                         f"sizes, got {q_heads} / {kv_heads} for {q.type_str()}, {k.type_str()}")

    def split(shape, heads):
        return (shape[0], heads, shape[1], shape[2] // heads)
    return split(q.shape, q_heads), split(k.shape, kv_heads), split(v.shape, kv_heads)


def _attention_macc(node) -> int:
    q, k, v = heads_view(node.inputs[0], node.inputs[1], node.inputs[2], node.attrs)
    total = node.outputs[1].shape[2]
    return q[0] * q[1] * q[2] * total * (q[3] + v[3])


@op("Attention", "matmul", inputs=("Q", "K", "V", "attn_mask?", "past_key?", "past_value?", "nonpad_kv_seqlen?"),
    outputs=4, macc=_attention_macc,
    attrs={"scale": Attr("float?", None), "is_causal": Attr("int", 0, (0, 1)),
           "q_num_heads": Attr("int", 0), "kv_num_heads": Attr("int", 0),
           "softcap": Attr("float", 0.0), "qk_matmul_output_mode": Attr("int", 0, (0, 1, 2, 3))})
def attention(inputs, attrs):
    """``present_key = concat(past_key, K)``, likewise V; K / V heads repeat to ``Hq``
    (each kv head ``Hq / Hkv`` times in a row); ``s = scale`` (default ``1 / sqrt(D)``)
    applied as ``sqrt(s)`` to Q and K; ``A = Q K^T + bias``, bias = attn_mask (bool: 0 where
    true, -inf where false; shorter masks padded with -inf) plus, with ``is_causal``,
    ``-inf`` where ``column > row + P``, plus ``-inf`` at key positions from
    ``nonpad_kv_seqlen[b]`` on (int64 ``[B]``, per-sample valid lengths); ``softcap > 0``:
    ``A = softcap * tanh(A / softcap)``;
    ``Y = softmax(A) V``. Outputs Y, present_key, present_value and qk_matmul_output (A
    before the mask's addition for mode 0, after it for 1, after softcap for 2, the softmax
    for 3)."""
    q, k, v = inputs[:3]
    q4, k4, v4 = heads_view(q, k, v, attrs)
    past = inputs[4] if len(inputs) > 4 else None
    past_length = 0 if past is None else past.shape[2]
    if q4[0] != k4[0] or k4[:3] != v4[:3] or q4[3] != k4[3] or q4[1] % k4[1]:
        raise ValueError(f"Q {list(q4)}, K {list(k4)} and V {list(v4)} (as [B, heads, sequence, "
                         "size]) do not fit together")
    total = past_length + k4[2]
    present_key = (k4[0], k4[1], total, k4[3])
    present_value = (v4[0], v4[1], total, v4[3])
    y = (q4[0], q4[1], q4[2], v4[3]) if q.rank == 4 else (q4[0], q4[2], q4[1] * v4[3])
    qk = (q4[0], q4[1], q4[2], total)
    return [TensorType(q.dtype, y), TensorType(q.dtype, present_key),
            TensorType(q.dtype, present_value), TensorType(q.dtype, qk)]
