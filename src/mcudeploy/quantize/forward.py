"""The float forward pass calibration and the quantization report stream through: one sample,
node by node, each produced tensor handed to a visitor and freed after its last reader.

    forward(graph, sample, visit=None, keep=()) -> {name: array}   # outputs (+ kept tensors)

Memory: the tensors alive at one step of one sample (plus what ``keep`` asks for), never
every tensor of every sample. Each op runs on its float reference kernel
(:mod:`mcudeploy.reference.float_kernels`), except ungrouped Conv, which runs in float32
(:mod:`.fast_conv`: TFLite's and onnxruntime's calibrators compute in float32; it is the
bulk of the time). ``visit(value, array)`` sees every graph input and every float node
output once, in execution order.
"""
from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

from ..ir import Graph, Value
from ..reference.float_executor import _last_uses, check_feeds
from ..reference.float_kernels import get_kernel
from .fast_conv import conv_float32, supports

Visitor = Callable[[Value, np.ndarray], None]


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
