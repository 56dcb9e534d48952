"""The table of ONNX op converters and its ``@converter`` decorator."""
from __future__ import annotations

from typing import Callable

import onnx

from ..context import ConversionContext

Converter = Callable[[ConversionContext, onnx.NodeProto], None]

CONVERTERS: dict[str, Converter] = {}


def converter(*op_types: str) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of each ONNX ``op_types``."""
    def decorate(function: Converter) -> Converter:
        for op_type in op_types:
            if op_type in CONVERTERS:
                raise RuntimeError(f"ONNX converter for {op_type} registered twice")
            CONVERTERS[op_type] = function
        return function
    return decorate
