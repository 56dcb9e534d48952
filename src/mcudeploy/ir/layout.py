"""The image layout of a tensor: ``NCHW``, ``NHWC`` or ``None`` (not rank 4, or unknown).

    image_layout(value) = value.layout, when the importer or a pass annotated it;
                          else the ``layout`` attribute of a spatial op that produces or reads it;
                          else None.

Shared by the rules that speak about layouts (lint) and the data checks (``data check``), so
that both call the same tensor NCHW.
"""
from __future__ import annotations

from .value import Value

# ops whose ``layout`` attribute says how they read their first input and write their output
SPATIAL_OPS = ("Conv", "ConvTranspose", "BatchNormalization", "MaxPool", "AveragePool",
               "GlobalAveragePool")


def image_layout(value: Value) -> str | None:
    """``NCHW`` / ``NHWC`` of a rank-4 tensor, or ``None`` (module docstring)."""
    if value.rank != 4:
        return None
    if value.layout:
        return value.layout
    neighbours = [value.producer] if value.producer is not None else []
    neighbours += value.users
    for node in neighbours:
        if node.op in SPATIAL_OPS:
            return node.attrs["layout"]
    return None
