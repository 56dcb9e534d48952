"""Training losses that exported models sometimes keep: NegativeLogLikelihoodLoss
(SoftmaxCrossEntropyLoss is imported as LogSoftmax over axis 1 followed by it). One MACC
per input element."""
from __future__ import annotations

from ..dtypes import DType
from ..registry import Attr, TensorType, op
from ._common import macc_per_input


@op("NegativeLogLikelihoodLoss", "reduce", inputs=("X", "target", "weight?"),
    macc=macc_per_input,
    attrs={"reduction": Attr("str", "mean", ("none", "sum", "mean")),
           "ignore_index": Attr("ints", ())})
def negative_log_likelihood_loss(inputs, attrs):
    """``X [N, C, d...]``, ``target [N, d...]`` (int), optional ``weight [C]``:
    ``loss[n, d...] = -X[n, target[n, d...], d...] * w``, ``w = weight[target]`` (1 without
    weights) and 0 where ``target`` equals ``ignore_index`` (an empty tuple: none).
    ``reduction``: ``none`` keeps the loss per position, ``sum`` adds it, ``mean`` divides the
    sum by the sum of ``w``."""
    x, target = inputs[0], inputs[1]
    if x.rank < 2 or target.shape != (x.shape[0],) + x.shape[2:]:
        raise ValueError(f"target {target.type_str()} does not match X {x.type_str()} "
                         "(expected [N, d...] for X [N, C, d...])")
    if target.dtype not in (DType.INT32, DType.INT64):
        raise ValueError(f"target must be int32 or int64, got {target.type_str()}")
    if len(attrs["ignore_index"]) > 1:
        raise ValueError("ignore_index holds at most one value")
    shape = target.shape if attrs["reduction"] == "none" else ()
    return [TensorType(x.dtype, shape)]
