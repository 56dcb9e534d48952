"""Run a (possibly mixed-precision) quantized graph on a batch of samples.

Nodes with integer outputs and the QuantizeLinear / DequantizeLinear edges run through the
bit-exact integer kernels (:mod:`mcudeploy.reference.int_kernels`, batched); nodes kept float
run through the float kernels one sample at a time. A fully integer graph gives exactly what
:func:`mcudeploy.reference.int_executor.run_int` gives.

Feeds and results carry a leading batch axis: ``{name: (B, *declared_shape)}``. A float feed
for an integer graph input (a model quantized with ``int8_io``) is quantized with that
input's parameters, ``clip(round_half_even(x / scale) + zero_point)``, as the entry
QuantizeLinear of the float-I/O form would (:func:`integer_feeds`). Long runs go
in batches of :func:`samples_per_batch` samples (:func:`batches`): as many as keep the
integer kernels' working arrays (int64, eight times an int8 tensor) of every tensor of the
batch within ``BATCH_BYTES``, at least one and at most ``MAX_BATCH``: batched numpy kernels
are faster per sample than one sample at a time, and memory stays bounded whatever the
number of samples.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from ..ir import Graph, Node
from ..reference import run_float
from ..reference.float_executor import _last_uses
from ..reference.float_kernels import get_kernel
from ..reference.float_kernels.quant import quantize
from ..reference.int_kernels import get_int_kernel

INTEGER_EDGE_OPS = ("QuantizeLinear", "DequantizeLinear")
BATCH_BYTES = 256 << 20
MAX_BATCH = 64
WORKING_FACTOR = 8          # int64 working copies of int8 tensors


def runs_integer(node: Node) -> bool:
    """Whether ``node`` runs on an integer kernel (its outputs, or its input, are quantized)."""
    if node.op in INTEGER_EDGE_OPS:
        return True
    return any(v.dtype.is_integer and v.quant is not None for v in node.outputs)


def _read(value, env: dict[str, np.ndarray]) -> np.ndarray | None:
    if value is None:
        return None
    return value.const[None] if value.const is not None else env[value.name]


def _run_float_node(node: Node, inputs: list) -> list[np.ndarray]:
    batch = max(x.shape[0] for x in inputs if x is not None)
    results = []
    for index in range(batch):
        args = [None if x is None else x[min(index, x.shape[0] - 1)] for x in inputs]
        results.append(get_kernel(node.op)(node, args))
    return [np.stack([np.asarray(r[i], dtype=v.dtype.numpy) for r in results])
            for i, v in enumerate(node.outputs)]


def integer_feeds(graph: Graph, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``feeds`` with every float array for a quantized integer graph input quantized with
    that input's parameters (module docstring); other feeds unchanged."""
    inputs = {v.name: v for v in graph.inputs}
    converted = {}
    for name, array in feeds.items():
        array, value = np.asarray(array), inputs.get(name)
        if (value is not None and value.dtype.is_integer and value.quant is not None
                and np.issubdtype(array.dtype, np.floating)):
            array = quantize(array, value.quant, value.dtype.numpy)
        converted[name] = array
    return converted


def real_outputs(graph: Graph, outputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``outputs`` with every quantized integer graph output dequantized (real values)."""
    values = {v.name: v for v in graph.outputs}
    real = {}
    for name, array in outputs.items():
        value = values.get(name)
        quant = value.quant if value is not None and value.dtype.is_integer else None
        real[name] = quant.dequantize(array) if quant is not None else array
    return real


def run_quantized(graph: Graph, feeds: dict[str, np.ndarray], *,
                  capture: bool = False) -> dict[str, np.ndarray]:
    """Graph outputs (or, with ``capture``, every tensor) for batched ``feeds``."""
    env = integer_feeds(graph, feeds)
    freed = {} if capture else _last_uses(graph)
    for index, node in enumerate(graph.nodes):
        inputs = [_read(v, env) for v in node.inputs]
        if runs_integer(node):
            kernel = get_int_kernel(node.op)
            outputs = kernel.eval(node, kernel.prepare(node), inputs)
            batch = max(x.shape[0] for x in inputs if x is not None)
            outputs = [np.broadcast_to(o, (batch,) + o.shape[1:]) if o.shape[0] == 1 else o
                       for o in outputs]
        else:
            outputs = _run_float_node(node, inputs)
        for value, array in zip(node.outputs, outputs, strict=True):
            env[value.name] = array
        for name in freed.get(index, ()):
            env.pop(name, None)
    if capture:
        return env
    return {v.name: env[v.name] for v in graph.outputs}


def run_float_batch(graph: Graph, feeds: dict[str, np.ndarray], *,
                    capture: bool = False) -> dict[str, np.ndarray]:
    """The float reference on batched ``feeds`` (one sample at a time), stacked."""
    count = next(iter(feeds.values())).shape[0]
    runs = [run_float(graph, {k: v[i] for k, v in feeds.items()}, capture=capture)
            for i in range(count)]
    return {name: np.stack([run[name] for run in runs]) for name in runs[0]}


def stack_samples(samples: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """A list of per-sample feeds as one batched feed."""
    return {name: np.stack([sample[name] for sample in samples]) for name in samples[0]}


def samples_per_batch(graph: Graph, budget: int = BATCH_BYTES) -> int:
    """How many samples one batch holds (module docstring)."""
    per_sample = WORKING_FACTOR * sum(v.nbytes for v in graph.values() if v.const is None)
    return int(max(1, min(MAX_BATCH, budget // max(per_sample, 1))))


def batches(feeds: dict[str, np.ndarray], size: int) -> Iterator[dict[str, np.ndarray]]:
    """Batched ``feeds`` (``(N, ...)`` per input) in slices of ``size`` samples."""
    count = next(iter(feeds.values())).shape[0] if feeds else 0
    for start in range(0, count, size):
        yield {name: array[start:start + size] for name, array in feeds.items()}
