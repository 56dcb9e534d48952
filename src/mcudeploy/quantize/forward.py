"""The float forward pass calibration and the quantization report stream through: one sample,
node by node, each produced tensor handed to a visitor and freed after its last reader.

    forward(graph, sample, visit=None, keep=()) -> {name: array}   # outputs (+ kept tensors)

Memory: the tensors alive at one step of one sample (plus what ``keep`` asks for), never
every tensor of every sample. Each op runs on its float reference kernel
(:mod:`mcudeploy.reference.float_kernels`), except ungrouped Conv, which runs in float32
(:mod:`.fast_conv`: TFLite's and onnxruntime's calibrators compute in float32; it is the
bulk of the time). ``visit(value, array)`` sees every graph input and every float node
output once, in execution order.

    runner = float_runner(graph)    # runner(sample, visit=None, keep=()): the same contract

:func:`float_runner` is what calibration and the report run: onnxruntime on the graph's
ONNX export (:mod:`mcudeploy.exporters.onnx_run`, 3-4x faster than numpy on convolutions;
its arrays may be transposed views, in the value's shape) when it is installed and the
graph exports, else :func:`forward` (which also bounds memory by the live tensors only).
"""
from __future__ import annotations

from functools import partial
from typing import Callable, Iterable, Protocol

import numpy as np

from ..exporters.onnx_run import onnxruntime_forward
from ..ir import Graph, Value
from ..reference.float_executor import _last_uses, check_feeds
from ..reference.float_kernels import get_kernel
from .fast_conv import conv_float32, supports

Visitor = Callable[[Value, np.ndarray], None]


class Runner(Protocol):
    """One float forward pass of a fixed graph (:func:`forward`'s contract, graph bound)."""

    def __call__(self, sample: dict[str, np.ndarray], *, visit: Visitor | None = None,
                 keep: Iterable[str] | None = ()) -> dict[str, np.ndarray]: ...


def _kernel(node, inputs):
    if supports(node, inputs):
        return conv_float32
    return get_kernel(node.op)


def forward(graph: Graph, sample: dict[str, np.ndarray], *, visit: Visitor | None = None,
            keep: Iterable[str] | None = ()) -> dict[str, np.ndarray]:
    """Run ``graph`` on one ``sample`` (module docstring); the graph outputs and the ``keep``
    tensors by name. ``keep=None`` keeps every tensor (a capture of one sample)."""
    env = dict(check_feeds(graph, sample))
    if visit is not None:
        for value in graph.inputs:
            visit(value, env[value.name])
    kept = None if keep is None else set(keep) | {value.name for value in graph.outputs}
    freed = {} if kept is None else {index: [name for name in names if name not in kept]
                                     for index, names in _last_uses(graph).items()}
    for index, node in enumerate(graph.nodes):
        inputs = [None if v is None else v.const if v.const is not None else env[v.name] for v in node.inputs]
        results = _kernel(node, inputs)(node, inputs)
        for value, result in zip(node.outputs, results, strict=True):
            array = np.asarray(result).astype(value.dtype.numpy, copy=False)
            env[value.name] = array
            if visit is not None:
                visit(value, array)
        for name in freed.get(index, ()):
            env.pop(name, None)
    if kept is None:
        return env
    return {name: env[name] for name in kept if name in env}


def float_runner(graph: Graph, threads: int = 1) -> Runner:
    """The fastest available float forward of ``graph`` (module docstring); ``threads``:
    onnxruntime's intra-op threads per run (callers that run samples on several threads at
    once pass 1)."""
    runner = onnxruntime_forward(graph, threads)
    return runner if runner is not None else partial(forward, graph)
