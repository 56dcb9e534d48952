"""The mcudeploy intermediate representation. Depends on nothing else in the package
(except the shared error classes in :mod:`mcudeploy.errors`).

Public names: :class:`Graph`, :class:`Node`, :class:`Value`, :class:`DType`,
:class:`QuantParams`, the op registry (:func:`get_op`, :func:`all_ops`, :class:`OpDef`),
:func:`verify`, :func:`dump` and :func:`precision` (float / qdq / integer / mixed).
"""
from .dtypes import DType
from .dump import dump
from .graph import Graph
from .node import Node
from .precision import float_nodes, precision
from .quant import QuantParams
from .registry import CATEGORIES, Attr, OpDef, TensorType, all_ops, get_op, infer_types
from .value import Value
from .verify import verify

__all__ = ["CATEGORIES", "Attr", "DType", "Graph", "Node", "OpDef", "QuantParams", "TensorType",
           "Value", "all_ops", "dump", "float_nodes", "get_op", "infer_types", "precision", "verify"]
