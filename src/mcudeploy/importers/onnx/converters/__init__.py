"""ONNX op converters, one function per ONNX op, registered in :data:`CONVERTERS`.

A converter takes the :class:`~..context.ConversionContext` and the ``onnx.NodeProto`` and
adds IR nodes with ``ctx.emit``; it raises ``ctx.unsupported(node, why)`` for attribute
values the IR cannot express. Adding an op touches one place: a ``@converter("OpType")``
function in one of the modules imported below.
"""
from . import (  # noqa: E402,F401  (register)  # noqa: E402,F401  (register)
    activation,
    conv,
    elementwise,
    index_ops,
    math_ops,
    normalization_ops,
    pool,
    quant,
    reduce_ops,
    resize,
    shape_ops,
)
from .registry import CONVERTERS, converter

__all__ = ["CONVERTERS", "converter"]
