"""A float IR graph run on onnxruntime through its ONNX export (:func:`.onnx_qdq.to_onnx_model`):
the float forward pass calibration streams every sample through, at onnxruntime's speed.

    runner = onnxruntime_forward(graph)     # None when it cannot (the reason is logged)
    runner(sample, visit=None, keep=()) -> {name: array}   # as quantize.forward.forward
    ranges = onnxruntime_ranges(graph)      # ranges(sample) -> {name: (min, max, finite, count)}

Every non-constant IR value is asked for as a graph output. A value an NHWC op wrote is, in
the export, ``Transpose(NCHW result)`` followed by an ``Identity`` (:mod:`.onnx_ops`); the
output asked for is the tensor at the start of that chain, and the IR value is handed out
as its transposed numpy *view* (no copy), so that onnxruntime's optimizer drops the
Transpose pairs between consecutive NHWC ops as it does for the original NCHW model.

Arithmetic: float32 throughout, as onnxruntime's own calibrator (``quantize_static``) and
TFLite's compute; it differs from the float64-accumulating reference
(:mod:`mcudeploy.reference.float_kernels`) by float32 rounding (about 1e-6 relative).
Memory: onnxruntime returns all the outputs of one run at once, so one sample costs the sum
of its float activations; a graph whose sum exceeds :data:`MAX_RUN_BYTES` is not run here
(the numpy forward frees each tensor after its last reader instead). The arrays onnxruntime
returns live in its memory arena (which is kept: without it calibration of U-Net 256 took
19.5 s instead of 14.3 s), and hold chunks of it while they live; so a capture
(``keep=None``: every tensor, kept after the run) is copied out, and once the runner is
dropped the arena goes back (U-Net 256: peak RSS of ``quantize`` 1.1 GB, not 1.5 GB).
"""
from __future__ import annotations

import functools
import logging
import math
from typing import Callable, Iterable

import numpy as np
import onnx

from ..errors import McuDeployError
from ..extras import install_line
from ..ir import Graph, Value
from .onnx_qdq import to_onnx_model

log = logging.getLogger(__name__)

MAX_RUN_BYTES = 256 << 20     # per sample in flight (calibration runs two at once)
Visitor = Callable[[Value, np.ndarray], None]


def _sources(model: onnx.ModelProto, names: list[str]) -> dict[str, tuple[str, tuple[int, ...] | None]]:
    """For each IR value name: (the tensor at the start of its Identity / Transpose chain,
    the permutation that turns that tensor into the value; None = the tensor itself)."""
    producer = {output: node for node in model.graph.node for output in node.output}
    found = {}
    for name in names:
        source, permutation = name, None
        while source in producer and producer[source].op_type in ("Identity", "Transpose"):
            node = producer[source]
            if node.op_type == "Transpose":
                perm = next(list(a.ints) for a in node.attribute if a.name == "perm")
                permutation = tuple(perm[axis] for axis in (permutation or range(len(perm))))
            source = node.input[0]
        found[name] = (source, permutation)
    return found


class OnnxRuntimeForward:
    """One onnxruntime session over the ONNX export of a float graph (module docstring)."""

    def __init__(self, graph: Graph, session, sources: dict[str, tuple[str, tuple[int, ...] | None]]) -> None:
        self.graph = graph
        self.session = session
        self.sources = sources
        self.outputs = [output.name for output in session.get_outputs()]
        self.values = [v for v in list(graph.inputs) + [o for n in graph.nodes for o in n.outputs]
                       if v.name in sources]

    def __call__(self, sample: dict[str, np.ndarray], *, visit: Visitor | None = None,
                 keep: Iterable[str] | None = ()) -> dict[str, np.ndarray]:
        feeds = {value.name: np.asarray(sample[value.name], dtype=value.dtype.numpy) for value in self.graph.inputs}
        env = dict(zip(self.outputs, self.session.run(self.outputs, feeds), strict=True))
        env.update(feeds)
        arrays = {}
        for value in self.values:
            source, permutation = self.sources[value.name]
            array = env[source] if permutation is None else env[source].transpose(permutation)
            arrays[value.name] = array
            if visit is not None:
                visit(value, array)
        if keep is None:   # kept beyond this run: out of onnxruntime's arena (module docstring)
            return {name: np.array(array) for name, array in arrays.items()}
        wanted = set(keep) | {value.name for value in self.graph.outputs}
        return {name: np.array(arrays[name]) for name in wanted if name in arrays}


def _float_bytes(graph: Graph) -> int:
    return sum(v.nbytes for node in graph.nodes for v in node.outputs)


@functools.cache
def _say_numpy_forward() -> None:
    """One warning per process (calibration and the report both ask) naming the extra."""
    log.warning("onnxruntime is not installed: the float forward runs on numpy (faster with %s)",
                install_line("calib"))


def _export(graph: Graph):
    """(onnxruntime, the ONNX export of ``graph``, :func:`_sources` of its values), or None
    (the reason logged) when onnxruntime is missing or the graph does not export."""
    try:
        import onnxruntime
    except ImportError:
        _say_numpy_forward()
        return None
    try:
        model = to_onnx_model(graph)
    except (McuDeployError, onnx.checker.ValidationError) as error:
        log.info("%s: not exportable to ONNX (%s): the float forward runs on numpy", graph.name, error)
        return None
    names = [v.name for v in graph.inputs] + [o.name for n in graph.nodes for o in n.outputs]
    sources = _sources(model, names)
    constants = {initializer.name for initializer in model.graph.initializer}
    if any(source in constants for source, _ in sources.values()):
        log.info("%s: a value is a constant in the export: the float forward runs on numpy", graph.name)
        return None
    return onnxruntime, model, sources


def _session(onnxruntime, graph: Graph, model: onnx.ModelProto, threads: int):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = max(1, threads), 1
    options.log_severity_level = 3
    try:
        return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as error:  # onnxruntime raises its own exception types  # noqa: BLE001
        log.info("%s: onnxruntime refuses the export (%s): the float forward runs on numpy", graph.name, error)
        return None


def onnxruntime_forward(graph: Graph, threads: int = 1) -> OnnxRuntimeForward | None:
    """The onnxruntime forward of the float ``graph`` with ``threads`` intra-op threads, or
    None when onnxruntime is not installed, the graph has an op with no ONNX writer, one
    sample's activations exceed :data:`MAX_RUN_BYTES`, or onnxruntime refuses the export."""
    if _float_bytes(graph) > MAX_RUN_BYTES:
        log.info("%s: one sample's activations exceed %d bytes: the float forward runs on numpy "
                 "(it frees each tensor after its last reader)", graph.name, MAX_RUN_BYTES)
        return None
    exported = _export(graph)
    if exported is None:
        return None
    onnxruntime, model, sources = exported
    present = {v.name for v in model.graph.output} | {v.name for v in model.graph.input}
    for source in sorted({source for source, _ in sources.values()} - present):
        model.graph.output.append(onnx.helper.make_empty_tensor_value_info(source))
    session = _session(onnxruntime, graph, model, threads)
    return None if session is None else OnnxRuntimeForward(graph, session, sources)


REDUCTIONS = ("ReduceMin", "ReduceMax", "ReduceSumSquare")


class OnnxRuntimeRanges:
    """min, max and finiteness of every float value of one sample, reduced inside
    onnxruntime (:func:`onnxruntime_ranges`)."""

    def __init__(self, graph: Graph, session, reduced: dict[str, list[str]]) -> None:
        self.graph, self.session, self.reduced = graph, session, reduced
        self.outputs = [name for names in reduced.values() for name in names]
        self.sizes = {v.name: v.size for v in graph.values() if v.name in reduced}

    def __call__(self, sample: dict[str, np.ndarray]) -> dict[str, tuple[float, float, bool, int]]:
        """``{value name: (min, max, finite, element count)}`` in graph order; ``finite`` is
        False when a value holds a NaN or an Inf."""
        feeds = {value.name: np.asarray(sample[value.name], dtype=value.dtype.numpy) for value in self.graph.inputs}
        results = iter(self.session.run(self.outputs, feeds))
        ranges = {}
        for name in self.reduced:
            low, high, squares = (float(next(results)) for _ in REDUCTIONS)
            finite = not math.isnan(squares) and math.isfinite(low) and math.isfinite(high)
            ranges[name] = (low, high, finite, self.sizes[name])
        return ranges


def onnxruntime_ranges(graph: Graph, threads: int = 1) -> OnnxRuntimeRanges | None:
    """What the min / max observers need, and nothing else: the export of ``graph`` with a
    ``ReduceMin``, ``ReduceMax`` and ``ReduceSumSquare`` of every float value as the only
    outputs, so that no tensor is copied out of onnxruntime (about 10 % faster than
    :func:`onnxruntime_forward` on U-Net 256, and memory is onnxruntime's live tensors
    only, whatever the model's size). onnxruntime's ReduceMin / ReduceMax may skip a NaN;
    the sum of squares cannot (NaN^2 is NaN; an Inf makes it Inf, not NaN), so NaN and Inf
    are both caught. None when onnxruntime or the export cannot (as
    :func:`onnxruntime_forward`)."""
    exported = _export(graph)
    if exported is None:
        return None
    onnxruntime, model, sources = exported
    del model.graph.output[:]
    taken = {name for node in model.graph.node for name in node.output}
    reduced: dict[str, list[str]] = {}
    for value in list(graph.inputs) + [o for n in graph.nodes for o in n.outputs]:
        if not np.issubdtype(value.dtype.numpy, np.floating) or value.name in reduced:
            continue
        source = sources[value.name][0]
        reduced[value.name] = []
        for op in REDUCTIONS:
            output = f"{value.name}/{op}"
            while output in taken:
                output += "_"
            taken.add(output)
            model.graph.node.append(onnx.helper.make_node(op, [source], [output], keepdims=0))
            model.graph.output.append(onnx.helper.make_empty_tensor_value_info(output))
            reduced[value.name].append(output)
    session = _session(onnxruntime, graph, model, threads)
    return None if session is None else OnnxRuntimeRanges(graph, session, reduced)


__all__ = ["MAX_RUN_BYTES", "OnnxRuntimeForward", "OnnxRuntimeRanges", "onnxruntime_forward", "onnxruntime_ranges"]
