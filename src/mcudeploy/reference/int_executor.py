"""The bit-exact integer reference executor: run a quantized IR graph on numpy integers,
exactly as TensorFlow Lite Micro's reference kernels would, over a whole batch at once.

Input: a verified, fully quantized :class:`~mcudeploy.ir.Graph` (int8 / int16 activations
with ``QuantParams``, int8 weights, int32 / int64 biases; float only before a
QuantizeLinear or after a DequantizeLinear at the edges) and one array per graph input.

Batch rule: with ``batch=False`` (default) each feed has exactly its input's declared shape
and dtype and so do the outputs. With ``batch=True`` every feed carries one extra leading
axis ``B`` (the same for all feeds), ``(B, *declared_shape)``, and every output comes back
as ``(B, *declared_shape)``: sample ``b`` is computed exactly as a ``batch=False`` run on
``feed[b]`` would. Kernels always see that leading axis (``B = 1`` when not batching;
constants broadcast with ``B = 1``). Large batches run in chunks of ``CHUNK`` samples to
bound memory.

Steps (TFLM's Prepare / Eval split): :func:`prepare_graph` computes every node's
parameters first (so an unsupported node fails before anything runs), then the nodes run
in graph order; intermediates are freed after their last reader unless ``capture=True``,
which returns every graph input and node output by name.
"""
from __future__ import annotations

import logging
from typing import Any

import numpy as np

from ..errors import DataError, GraphError
from ..ir import Graph, Node, Value
from .float_executor import _last_uses
from .int_kernels import get_int_kernel

log = logging.getLogger(__name__)

CHUNK = 32  # samples per chunk of a batched run (keeps intermediates cache-sized)


def prepare_graph(graph: Graph) -> dict[str, Any]:
    """Every node's prepared parameters by node name (raises before anything runs)."""
    return {node.name: get_int_kernel(node.op).prepare(node) for node in graph.nodes}


def _describe(array: np.ndarray) -> str:
    return f"{array.dtype}[{','.join(map(str, array.shape))}]"


def check_int_feeds(graph: Graph, feeds: dict[str, np.ndarray], batch: bool) -> dict[str, np.ndarray]:
    """Feeds as arrays with a leading batch axis; :class:`DataError` naming the input for a
    missing / unknown name, a wrong dtype or shape (expected vs got), NaN / Inf, or batch
    sizes that differ between inputs."""
    expected = {value.name: value for value in graph.inputs}
    missing, unknown = sorted(set(expected) - set(feeds)), sorted(set(feeds) - set(expected))
    if missing or unknown:
        parts = [f"missing input(s) {', '.join(missing)}" if missing else "",
                 f"unknown input(s) {', '.join(unknown)}" if unknown else ""]
        raise DataError(f"graph {graph.name!r}: {'; '.join(p for p in parts if p)}; the graph "
                        f"takes {', '.join(f'{v.name} {v.type_str()}' for v in graph.inputs)}")
    arrays, sizes = {}, {}
    for name, value in expected.items():
        array = np.asarray(feeds[name])
        shape_ok = array.shape[1:] == value.shape and array.ndim >= 1 if batch else array.shape == value.shape
        if not shape_ok or array.dtype != value.dtype.numpy:
            want = f"{value.dtype}[B,{','.join(map(str, value.shape))}]" if batch else value.type_str()
            raise DataError(f"input {name!r}: expected {want}, got {_describe(array)}; convert or "
                            "reshape the data to the declared type"
                            + (" (batch=True adds one leading batch axis)" if batch else ""))
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            bad = int(array.size - np.isfinite(array).sum())
            raise DataError(f"input {name!r}: {bad} of {array.size} elements are NaN or Inf; "
                            "the reference only runs on finite data")
        arrays[name] = array if batch else array[None]
        sizes[name] = arrays[name].shape[0]
    if len(set(sizes.values())) > 1:
        raise DataError(f"graph {graph.name!r}: batched inputs have different batch sizes "
                        f"{sizes}; give every input the same leading axis")
    if batch and any(size == 0 for size in sizes.values()):
        raise DataError(f"graph {graph.name!r}: the batch is empty; give at least one sample")
    return arrays


def _read(value: Value | None, env: dict[str, np.ndarray], node: Node) -> np.ndarray | None:
    if value is None:
        return None
    if value.const is not None:
        return value.const[None]
    try:
        return env[value.name]
    except KeyError:
        raise GraphError(f"node {node.name!r} ({node.op}) reads {value.name!r} before it is "
                         "computed; run mcudeploy.ir.verify(graph) to find the broken order") from None


def _run_node(node: Node, params: Any, env: dict[str, np.ndarray]) -> None:
    inputs = [_read(value, env, node) for value in node.inputs]
    results = get_int_kernel(node.op).eval(node, params, inputs)
    batch = max((x.shape[0] for x in inputs if x is not None), default=1)
    for value, result in zip(node.outputs, results, strict=True):
        result = np.broadcast_to(result, (batch,) + value.shape) if result.shape[0] == 1 else result
        if result.shape[1:] != value.shape or result.dtype != value.dtype.numpy:
            raise RuntimeError(f"integer kernel {node.op} (node {node.name!r}) produced "
                               f"{_describe(result)} for {value.name!r}, declared {value.type_str()}")
        env[value.name] = result


def _run_chunk(graph: Graph, params: dict[str, Any], arrays: dict[str, np.ndarray],
               capture: bool, size: int) -> dict[str, np.ndarray]:
    """Run every node on one chunk of ``size`` samples; results broadcast to ``size``."""
    env = dict(arrays)
    freed = {} if capture else _last_uses(graph)
    for index, node in enumerate(graph.nodes):
        _run_node(node, params[node.name], env)
        for name in freed.get(index, ()):
            env.pop(name, None)
    if not capture:
        env = {value.name: env[value.name] if value.const is None else value.const[None]
               for value in graph.outputs}
    return {name: np.broadcast_to(array, (size,) + array.shape[1:]) for name, array in env.items()}


def run_int(graph: Graph, feeds: dict[str, np.ndarray], *, capture: bool = False,
            batch: bool = False) -> dict[str, np.ndarray]:
    """Run the quantized ``graph`` bit-exactly on ``feeds`` (input name -> array).

    Returns the graph outputs by value name (integer outputs keep their dtype; float ones
    after a DequantizeLinear are float32); with ``capture=True`` every graph input and node
    output. ``batch=True``: see the module docstring. Raises :class:`DataError` for wrong
    feeds and :class:`UnsupportedError` for a node without an integer kernel, before running.
    """
    arrays = check_int_feeds(graph, feeds, batch)
    params = prepare_graph(graph)
    total = next(iter(arrays.values())).shape[0] if arrays else 1
    log.debug("graph %r: %d nodes on %d sample(s), chunks of %d", graph.name, len(graph.nodes),
              total, CHUNK)
    pieces = []
    for start in range(0, total, CHUNK):
        chunk = {name: array[start:start + CHUNK] for name, array in arrays.items()}
        pieces.append(_run_chunk(graph, params, chunk, capture, min(CHUNK, total - start)))
    merged = {name: np.concatenate([piece[name] for piece in pieces]) for name in pieces[0]}
    return merged if batch else {name: array[0] for name, array in merged.items()}
