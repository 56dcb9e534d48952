"""Offline preparation shared by the optimised int8 kernel variants (:mod:`.dsp`, :mod:`.mve`):
the weight rows of a dot-product node, the bias with the input offset folded in, and the
common node checks.

Offset folding, exact modulo 2^32 (the C accumulators wrap like TFLite's int32 ones)::

    acc[o] = bias[o] + sum_k W[o, k] * (X[k] + input_offset)
           = bias'[o] + sum_k W[o, k] * X[k],    bias'[o] = wrap32(bias[o] + input_offset * sum_k W[o, k])

so the kernels multiply raw int8 inputs and pad with the input zero point
(``X = -input_offset`` adds nothing).
"""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedError
from ..ir import Node


def prepared_params(node: Node):
    """The node's integer parameters (the reference ``prepare``: multipliers, shifts, offsets)."""
    from ..reference.int_kernels.registry import prepare_node  # the spec the variants match
    return prepare_node(node)


def is_depthwise(node: Node) -> bool:
    """The C emitters' rule: weights [C*M, kH, kW, 1] with group = C > 1."""
    x, w = node.inputs[0], node.inputs[1]
    group = node.attrs.get("group", 1)
    return w.shape[3] == 1 and group == x.shape[3] and group > 1


def int8_refusal(node: Node) -> str | None:
    """Why an int8 variant cannot run ``node`` (int8 data, constant int8 weights / int32 bias,
    NHWC, per-tensor activations), or None."""
    if node.attrs.get("layout", "NHWC") != "NHWC":
        return f"layout {node.attrs.get('layout')}: the variants run NHWC"
    values = [node.inputs[0], node.outputs[0]]
    if any(str(v.dtype) != "int8" for v in values):
        return f"{values[0].dtype} -> {values[1].dtype}: int8 activations only"
    if node.op in ("Conv", "Gemm"):
        weights = node.inputs[1]
        bias = node.input(2) if len(node.inputs) > 2 else None
        if weights.const is None or str(weights.dtype) != "int8":
            return "weights are not a constant int8 tensor"
        if bias is not None and (bias.const is None or str(bias.dtype) != "int32"):
            return "bias is not a constant int32 tensor"
    return None


def weight_rows(node: Node) -> np.ndarray:
    """The weights as ``[O, K]`` int8 rows (conv ``[O, kH, kW, C/g]``, fully connected ``[N, K]``)."""
    weights = node.inputs[1].const
    assert weights is not None  # int8_refusal accepts constant weights only
    return np.ascontiguousarray(weights.reshape(weights.shape[0], -1), dtype=np.int8)


def bias_values(node: Node, channels: int) -> np.ndarray:
    bias = node.input(2) if len(node.inputs) > 2 else None
    if bias is None:
        return np.zeros(channels, dtype=np.int64)
    assert bias.const is not None  # int8_refusal accepts a constant bias only
    return bias.const.reshape(-1).astype(np.int64)


def folded_bias(node: Node, input_offset: int, rows: np.ndarray) -> np.ndarray:
    """``bias'`` of the module docstring, int32 (wrapped)."""
    total = bias_values(node, rows.shape[0]) + int(input_offset) * rows.astype(np.int64).sum(axis=1)
    return ((total + 2**31) % 2**32 - 2**31).astype(np.int32)


def params_or_refusal(node: Node):
    """``(params, None)``, or ``(None, reason)`` when the reference cannot prepare the node."""
    try:
        return prepared_params(node), None
    except (UnsupportedError, KeyError, ValueError) as error:
        return None, f"not preparable: {error}"


SCRATCH_FLOOR = 1024      # bytes any optimised variant may take as scratch


def scratch_budget(node: Node) -> int:
    """The most scratch an optimised variant may take for ``node`` (:func:`scratch_refusal`)."""
    return max(SCRATCH_FLOOR, (node.inputs[0].nbytes + node.outputs[0].nbytes) // 2)


def scratch_refusal(node: Node, scratch: int) -> str | None:
    """The memory rule of the optimised variants: scratch may not exceed
    max(1 KiB, (input bytes + output bytes) / 2), so that it never dominates what the node's
    own tensors take (a K = 4000 fully connected layer with a q15 copy of its input, 16 KB for
    an output of 4 bytes, is refused and the next, smaller variant runs). The arena effect of
    the variants on the shared models is measured in benchmarks/results/kernels.md."""
    budget = scratch_budget(node)
    if scratch > budget:
        return (f"scratch {scratch} bytes above the budget max(1 KiB, (input + output) / 2) = {budget} bytes; "
                "a smaller kernel runs")
    return None


def scratch_call(function: str):
    """A variant's ``scratch_check``: the C call of its ``_scratch_size`` function on the
    layer's declared params and dims (the emitters' ``<symbol>_params``, ``_in0_dims``, ...)."""
    def expression(symbol: str) -> str:
        return f"{function}(&{symbol}_params, &{symbol}_in0_dims, &{symbol}_w_dims, &{symbol}_out_dims)"
    return expression
