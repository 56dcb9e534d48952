"""The float reference executor: run an IR graph on numpy arrays, node by node.

Input: a verified :class:`~mcudeploy.ir.Graph` and one array per graph input (by value
name). Output: the graph outputs by value name, or, with ``capture=True``, every graph
input and every node output by name (for layer-by-layer comparison). Each op's kernel
lives in :mod:`mcudeploy.reference.float_kernels`; this module only checks the feeds,
walks ``graph.nodes`` in order and frees each intermediate array after its last reader ran.
"""
from __future__ import annotations

import logging
from typing import Optional

import numpy as np

from ..errors import DataError, GraphError
from ..ir import Graph, Node, Value
from .float_kernels import get_kernel

log = logging.getLogger(__name__)


def check_feeds(graph: Graph, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Raise :class:`DataError` unless ``feeds`` holds exactly the graph inputs, each with its
    declared shape and dtype and (for floats) only finite numbers. Returns the arrays."""
    expected = {value.name: value for value in graph.inputs}
    missing = sorted(set(expected) - set(feeds))
    unknown = sorted(set(feeds) - set(expected))
    if missing or unknown:
        parts = [f"missing input(s) {', '.join(missing)}" if missing else "",
                 f"unknown input(s) {', '.join(unknown)}" if unknown else ""]
        raise DataError(f"graph {graph.name!r}: {'; '.join(p for p in parts if p)}; the graph "
                        f"takes {', '.join(f'{v.name} {v.type_str()}' for v in graph.inputs)}")
    arrays = {}
    for name, value in expected.items():
        array = np.asarray(feeds[name])
        if array.shape != value.shape or array.dtype != value.dtype.numpy:
            raise DataError(f"input {name!r}: expected {value.type_str()}, got "
                            f"{array.dtype}[{','.join(map(str, array.shape))}]; convert or reshape "
                            "the data to the declared type")
        if np.issubdtype(array.dtype, np.floating) and not np.isfinite(array).all():
            bad = int(array.size - np.isfinite(array).sum())
            raise DataError(f"input {name!r}: {bad} of {array.size} elements are NaN or Inf; "
                            "the reference only runs on finite data")
        arrays[name] = array
    return arrays


def _last_uses(graph: Graph) -> dict[int, list[str]]:
    """For each node index, the names of values whose last reader is that node
    (graph outputs are never freed)."""
    kept = {value.name for value in graph.outputs}
    last: dict[str, int] = {}
    for index, node in enumerate(graph.nodes):
        for value in node.inputs:
            if value is not None and value.const is None:
                last[value.name] = index
        for value in node.outputs:  # an output nobody reads is freed at once
            last.setdefault(value.name, index)
    freed: dict[int, list[str]] = {}
    for name, index in last.items():
        if name not in kept:
            freed.setdefault(index, []).append(name)
    return freed


def _read(value: Optional[Value], env: dict[str, np.ndarray], node: Node) -> Optional[np.ndarray]:
    if value is None:
        return None
    if value.const is not None:
        return value.const
    try:
        return env[value.name]
    except KeyError:
        raise GraphError(f"node {node.name!r} ({node.op}) reads {value.name!r} before it is "
                         "computed; run mcudeploy.ir.verify(graph) to find the broken order"
                         ) from None


def _run_node(node: Node, env: dict[str, np.ndarray]) -> None:
    inputs = [_read(value, env, node) for value in node.inputs]
    results = get_kernel(node.op)(node, inputs)
    for value, result in zip(node.outputs, results, strict=True):
        result = np.asarray(result)
        if result.shape != value.shape:
            raise RuntimeError(f"float kernel {node.op} (node {node.name!r}) produced shape "
                               f"{result.shape} for {value.name!r}, declared {value.type_str()}")
        env[value.name] = result.astype(value.dtype.numpy, copy=False)


def run_float(graph: Graph, feeds: dict[str, np.ndarray], *,
              capture: bool = False) -> dict[str, np.ndarray]:
    """Run ``graph`` in float32 on ``feeds`` (graph input name -> array).

    Returns the graph outputs by value name; with ``capture=True`` every graph input and node
    output by name. Raises :class:`DataError` for wrong feeds before running anything.
    """
    env: dict[str, np.ndarray] = dict(check_feeds(graph, feeds))
    freed = {} if capture else _last_uses(graph)
    for index, node in enumerate(graph.nodes):
        _run_node(node, env)
        for name in freed.get(index, ()):
            env.pop(name, None)
    if capture:
        return env
    return {value.name: (value.const if value.const is not None else env[value.name])
            for value in graph.outputs}
