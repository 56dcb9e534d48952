"""ONNX importer entry point: ``import_onnx(path, data, input_shapes=...) -> ir.Graph``.

The implementation lives in the :mod:`mcudeploy.importers.onnx` package (one file per
concern: parsing, external data, shapes, constant folding, op converters); this module
keeps the name :func:`~mcudeploy.importers.load_model` imports.
"""
from __future__ import annotations

from .onnx.importer import import_onnx

__all__ = ["import_onnx"]
