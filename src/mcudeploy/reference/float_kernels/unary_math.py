"""Elementwise math kernels (Exp, Log, Sqrt, Rsqrt, Abs, Sign, Floor, Ceil, Round, Erf and
the trigonometric / hyperbolic functions); :func:`table_kernel` also serves the
activations of :mod:`.activation`.

Float inputs are computed in float64 and rounded once to the output dtype (at most half an
ulp of float32 from the exact value, so within 1e-4 relative of onnxruntime / LiteRT, which
round their float32 libm results); integer inputs stay in their dtype (Abs, Sign). IEEE
special values pass through (``Log(0) = -inf``, ``Sqrt(-1) = NaN``, warnings silenced).
"""
from __future__ import annotations

import math

import numpy as np

from ...ir import Node
from ._common import output_dtype
from .registry import kernel

erf = np.vectorize(math.erf, otypes=[np.float64])

FUNCTIONS = {
    "Exp": lambda x, node: np.exp(x),
    "Log": lambda x, node: np.log(x),
    "Sqrt": lambda x, node: np.sqrt(x),
    "Rsqrt": lambda x, node: 1.0 / np.sqrt(x),
    "Abs": lambda x, node: np.abs(x),
    "Sign": lambda x, node: np.sign(x),
    "Floor": lambda x, node: np.floor(x),
    "Ceil": lambda x, node: np.ceil(x),
    "Round": lambda x, node: np.rint(x),
    "Erf": lambda x, node: erf(x),
    **{name: (lambda function: lambda x, node: function(x))(getattr(np, function_name))
       for name, function_name in (("Sin", "sin"), ("Cos", "cos"), ("Tan", "tan"),
                                   ("Asin", "arcsin"), ("Acos", "arccos"), ("Atan", "arctan"),
                                   ("Sinh", "sinh"), ("Cosh", "cosh"), ("Asinh", "arcsinh"),
                                   ("Acosh", "arccosh"), ("Atanh", "arctanh"))},
}


def table_kernel(table: dict):
    """A kernel computing ``table[node.op](x, node)`` on the input (float64 for floats)."""
    def unary(node: Node, inputs: list) -> list[np.ndarray]:
        x = inputs[0]
        if np.issubdtype(x.dtype, np.floating):
            x = x.astype(np.float64)
        with np.errstate(all="ignore"):
            result = np.asarray(table[node.op](x, node))
        return [result.astype(output_dtype(node), copy=False)]
    return unary


for _op_name in FUNCTIONS:
    kernel(_op_name)(table_kernel(FUNCTIONS))
