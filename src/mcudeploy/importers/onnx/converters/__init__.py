"""ONNX op converters, one function per ONNX op, registered in :data:`CONVERTERS`.

A converter takes the :class:`~..context.ConversionContext` and the ``onnx.NodeProto`` and
adds IR nodes with ``ctx.emit``; it raises ``ctx.unsupported(node, why)`` for attribute
values the IR cannot express. Adding an op touches one place: a ``@converter("OpType")``
function in one of the modules imported below.
"""
from .registry import CONVERTERS, converter

from . import activation, conv, elementwise, pool, quant, resize, shape_ops  # noqa: E402,F401  (register)

__all__ = ["CONVERTERS", "converter"]
