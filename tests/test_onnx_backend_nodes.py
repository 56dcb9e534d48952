"""The ONNX backend node test cases, imported with ``load_model`` and run with ``run_float``.

The cases come from the installed ``onnx`` package (``collect_testcases``, generated
offline; each has a one-node model and inputs / expected outputs). Which cases run is
decided up front from the case alone, by the rules in :func:`skip_reason` (first match
wins), never by catching failures:

1. every node's op type must be supported: an IR op (the IR names its ops as ONNX does) or
   an op the ONNX importer has a converter for (``op TopK not supported``);
2. every input and output must be a tensor (not a sequence / optional) of an IR dtype
   (``dtype double``) without zero-size dimensions (IR shapes are positive);
3. the case must not use an attribute value or input the IR cannot express: see
   ``REFUSED`` (e.g. ``attribute antialias=1 refused by the importer``), training-mode
   outputs (``dynamic / training-mode outputs``), non-2-D convolutions and pools, Resize
   ``scales`` whose ratio differs from ``output / input`` size (the IR keeps ``sizes`` only).

Rules 4-7: no input holds NaN / Inf (the reference runs on finite data only); no
QuantizeLinear / DequantizeLinear takes a scale computed by a node (dynamic quantization);
no intermediate tensor has a zero-size dimension (ONNX shape inference says so); every
output depends on the values of some input left after freezing (``load_model`` refuses
constant outputs).

Before import, the inputs that the IR needs as static parameters (Reshape's shape, Slice's
starts, Conv's weights, ... see ``PARAMETER_INPUTS``) become initializers holding the case's
own data; so do graph inputs from which a shape-giving input (``SHAPE_INPUTS``) is computed
through other nodes (an expanded function's window size, crop shape, ...). The model
computes the same outputs for that data.

The number of skipped cases may not grow past :data:`MAX_SKIPPED` (issue 15 halved it).

Numbers must match the case's expected outputs to rtol 1e-4, atol 1e-5, or the case's own
(looser) tolerance, which some need because their expected values are printed decimals. Run with ``-rs`` to
see every skip reason; ``test_backend_case_census`` logs the counts by reason.
"""
from __future__ import annotations

import collections
import functools
import logging
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from mcudeploy.importers import load_model
from mcudeploy.ir import DType, all_ops
from mcudeploy.reference import run_float

pytestmark = pytest.mark.slow  # collecting the 1,600 cases from the onnx package takes ~5 s

log = logging.getLogger(__name__)
RTOL, ATOL = 1e-4, 1e-5

# Inputs (by position) that the IR holds as attributes or constants.
PARAMETER_INPUTS = {
    "Reshape": {1}, "Slice": {1, 2, 3, 4}, "Pad": {1, 2, 3}, "Split": {1}, "Squeeze": {1},
    "Unsqueeze": {1}, "Resize": {1, 2, 3}, "ReduceMean": {1}, "Clip": {1, 2},
    "QuantizeLinear": {1, 2}, "DequantizeLinear": {1, 2}, "Conv": {1, 2},
    "ConvTranspose": {1, 2}, "BatchNormalization": {1, 2, 3, 4}, "PRelu": {1},
    "Dropout": {1, 2}, "Gemm": {1, 2}, "Upsample": {1},
    "Expand": {1}, "Tile": {1}, "TopK": {1}, "CumSum": {1}, "OneHot": {1}, "Trilu": {1},
    "Range": {0, 1, 2}, "ConstantOfShape": {0}, "GroupNormalization": {1, 2},
    **{op: {1} for op in ("ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd", "ReduceL1",
                          "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp")},
}
# Inputs that give shapes (or Pad's value): a graph input they are computed from is frozen too.
SHAPE_INPUTS = {op: positions for op, positions in PARAMETER_INPUTS.items() if op not in (
    "Conv", "ConvTranspose", "BatchNormalization", "PRelu", "Gemm", "QuantizeLinear",
    "DequantizeLinear", "Clip", "Dropout", "GroupNormalization")}
SHAPE_ONLY_READERS = {"Shape", "Size"}  # their output does not depend on the input's values
MAX_SKIPPED = 688  # at most half of the 1,377 cases skipped before issue 15

# (op type, attribute, predicate on its value) -> the value is outside what the IR expresses.
REFUSED = [
    ("Resize", "antialias", lambda v: v != 0),
    ("Resize", "mode", lambda v: v == b"cubic"),
    ("Resize", "coordinate_transformation_mode", lambda v: v == b"tf_crop_and_resize"),
    ("Resize", "exclude_outside", lambda v: v != 0),
    ("Resize", "keep_aspect_ratio_policy", lambda v: v != b"stretch"),
    ("Pad", "mode", lambda v: v == b"wrap"),
    ("QuantizeLinear", "block_size", lambda v: v != 0),
    ("DequantizeLinear", "block_size", lambda v: v != 0),
    ("QuantizeLinear", "saturate", lambda v: v != 1),
    ("QuantizeLinear", "precision", lambda v: v != 0),
    ("DequantizeLinear", "precision", lambda v: v != 0),
    ("BatchNormalization", "training_mode", lambda v: v != 0),
]

SPATIAL_2D_OPS = {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool"}
IR_DTYPES = {onnx.helper.np_dtype_to_tensor_dtype(d.numpy) for d in DType}


FOLDED_BY_IMPORTER = {"Constant", "Shape", "Size"}  # always constants at import time


def _supported_ops() -> set[str]:
    ops = set(all_ops()) | FOLDED_BY_IMPORTER
    try:
        from mcudeploy.importers.onnx.converters import CONVERTERS
        ops |= set(CONVERTERS)
    except ImportError:  # importer still being written: IR op names only
        pass
    return ops


@functools.cache
def all_cases() -> list:
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases("")
    return sorted(cases, key=lambda case: case.name)


def _tensor_types(model: onnx.ModelProto) -> list[int]:
    values = list(model.graph.input) + list(model.graph.output)
    return [v.type.tensor_type.elem_type for v in values if v.type.HasField("tensor_type")]


def _refused_attribute(node: onnx.NodeProto) -> str | None:
    for attribute in node.attribute:
        value = onnx.helper.get_attribute_value(attribute)
        for op_type, name, refused in REFUSED:
            if node.op_type == op_type and attribute.name == name and refused(value):
                shown = value.decode() if isinstance(value, bytes) else value
                return f"attribute {name}={shown} refused by the importer"
    return None


def _spatial_rank(case, node: onnx.NodeProto) -> int | None:
    inputs = case.data_sets[0][0]
    return np.asarray(_array(inputs[0])).ndim if inputs else None


def _resize_scale_mismatch(case, node: onnx.NodeProto) -> bool:
    inputs = dict(zip([value.name for value in case.model.graph.input], case.data_sets[0][0]))
    if len(node.input) < 3 or not node.input[2] or node.input[2] not in inputs:
        return False
    x, scales = _array(inputs[node.input[0]]), _array(inputs[node.input[2]])
    if scales.size == 0:
        return False
    axes = [a for attr in node.attribute if attr.name == "axes" for a in attr.ints] \
        or range(x.ndim)
    sizes = [np.floor(x.shape[a] * s) for a, s in zip(axes, scales)]
    return any(abs(size / x.shape[a] - s) > 1e-6 for a, size, s in zip(axes, sizes, scales))


def _computed_quantization(model: onnx.ModelProto) -> bool:
    """A Quantize/DequantizeLinear whose scale or zero point some node computes."""
    produced = {name for node in model.graph.node if node.op_type != "Constant" for name in node.output}
    return any(node.op_type in ("QuantizeLinear", "DequantizeLinear")
               and any(name in produced for name in node.input[1:3]) for node in model.graph.node)


def _empty_intermediate(model: onnx.ModelProto) -> bool:
    """Whether ONNX shape inference gives some node output a zero-size dimension."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # inference cannot read the model: let the import say what is wrong
        return False
    return any(dim.HasField("dim_value") and dim.dim_value == 0
               for value in inferred.graph.value_info
               for dim in value.type.tensor_type.shape.dim)


def _constant_output(case) -> bool:
    """Whether some graph output does not depend on the values of the inputs left after
    :func:`_static_parameters` (Shape / Size / EyeLike read shapes, CastLike's second input
    gives only a dtype)."""
    model, feeds = _static_parameters(case)
    live = set(feeds)
    for node in model.graph.node:
        reads = node.input[:1] if node.op_type == "CastLike" else node.input
        if node.op_type not in ("Shape", "Size", "EyeLike") and any(n in live for n in reads):
            live.update(node.output)
    return any(value.name not in live for value in model.graph.output)


_GRAPH_REASONS: dict[str, str | None] = {}


def _graph_reason(case) -> str | None:
    """Rules 5-7 (they look at the whole graph; computed once per case)."""
    if case.name not in _GRAPH_REASONS:
        reason = None
        if _computed_quantization(case.model):
            reason = "dynamic quantization (a scale computed at run time; the IR keeps them static)"
        elif _empty_intermediate(case.model):
            reason = "empty intermediate tensor (a zero-size dimension; IR shapes are positive)"
        elif _constant_output(case):
            reason = "constant output (it does not depend on the input values; load_model refuses it)"
        _GRAPH_REASONS[case.name] = reason
    return _GRAPH_REASONS[case.name]


def skip_reason(case, supported: set[str]) -> str | None:
    """Why ``case`` is not run (``None``: it runs). The rules of the module docstring."""
    model = case.model
    for node in model.graph.node:
        if node.op_type not in supported or node.domain not in ("", "ai.onnx"):
            return f"op {node.op_type} not supported"
    values = list(model.graph.input) + list(model.graph.output)
    if any(not value.type.HasField("tensor_type") for value in values):
        return "sequence / optional / map values (the IR holds tensors only)"
    for elem_type in _tensor_types(model):
        if elem_type not in IR_DTYPES:
            return f"dtype {onnx.helper.tensor_dtype_to_np_dtype(elem_type)}"
    inputs, outputs = case.data_sets[0]
    if any(0 in _array(data).shape for data in [*inputs, *outputs]):
        return "empty tensor (a zero-size dimension; IR shapes are positive)"
    if any(_array(data).dtype.kind == "f" and not np.isfinite(_array(data)).all() for data in inputs):
        return "NaN / Inf input (the reference runs on finite data only)"
    reason = _graph_reason(case)
    if reason:
        return reason
    for node in model.graph.node:
        reason = _refused_attribute(node)
        if reason:
            return reason
        outputs = [name for name in node.output if name]
        if node.op_type in ("Dropout", "BatchNormalization") and len(outputs) > 1:
            return "dynamic / training-mode outputs (mask, running statistics)"
        if node.op_type == "MaxPool" and len(outputs) > 1:
            return "MaxPool Indices output (the IR op gives values only)"
        if node.op_type == "Dropout" and len(node.input) > 2 and node.input[2]:
            return "dynamic / training-mode outputs (training_mode input)"
        if node.op_type in SPATIAL_2D_OPS and _spatial_rank(case, node) not in (3, 4):
            return (f"{node.op_type} on a rank-{_spatial_rank(case, node)} tensor (IR ops are "
                    "2-D; the importer lifts 1-D to 2-D, 3-D is refused)")
        if node.op_type == "Resize" and _resize_scale_mismatch(case, node):
            return "Resize scales differ from output/input size ratio (IR keeps sizes only)"
    return None


def _array(data) -> np.ndarray:
    return numpy_helper.to_array(data) if isinstance(data, onnx.TensorProto) else np.asarray(data)


def _static_parameters(case) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The case's model with its parameter inputs made initializers, and the remaining feeds."""
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    graph = model.graph
    inputs = case.data_sets[0][0]
    feeds = {value.name: _array(data) for value, data in zip(graph.input, inputs)}
    frozen: set[str] = set()
    for node in graph.node:
        for position in PARAMETER_INPUTS.get(node.op_type, ()):
            if position < len(node.input) and node.input[position] in feeds:
                frozen.add(node.input[position])
    frozen |= _shape_sources(graph, set(feeds))
    for name in frozen:
        graph.initializer.append(numpy_helper.from_array(feeds.pop(name), name))
    kept = [value for value in graph.input if value.name not in frozen]
    del graph.input[:]
    graph.input.extend(kept)
    return model, feeds


def _shape_sources(graph: onnx.GraphProto, inputs: set[str]) -> set[str]:
    """Graph inputs from which a shape-giving input (:data:`SHAPE_INPUTS`) is computed,
    following producers backwards (not through Shape / Size)."""
    producer = {name: node for node in graph.node for name in node.output}
    pending = [node.input[i] for node in graph.node for i in SHAPE_INPUTS.get(node.op_type, ())
               if i < len(node.input) and node.input[i]]
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        node = producer.get(name)
        if node is not None and node.op_type not in SHAPE_ONLY_READERS:
            pending.extend(n for n in node.input if n)
    return seen & inputs


def _case_params():
    supported = _supported_ops()
    params = []
    for case in all_cases():
        reason = skip_reason(case, supported)
        marks = [pytest.mark.skip(reason=reason)] if reason else []
        params.append(pytest.param(case, id=case.name, marks=marks))
    return params


@pytest.mark.parametrize("case", _case_params())
def test_backend_case(case, tmp_path: Path):
    model, feeds = _static_parameters(case)
    path = tmp_path / f"{case.name}.onnx"
    path.write_bytes(model.SerializeToString())
    graph = load_model(path)
    results = run_float(graph, {value.name: feeds[value.name] for value in graph.inputs})
    expected_outputs = [_array(data) for data in case.data_sets[0][1]]
    assert len(graph.outputs) == len(expected_outputs)
    for value, expected in zip(graph.outputs, expected_outputs):
        actual = results[value.name]
        assert actual.shape == expected.shape, f"{value.name}: {actual.shape} vs {expected.shape}"
        assert actual.dtype == expected.dtype, f"{value.name}: {actual.dtype} vs {expected.dtype}"
        # the case's own tolerance (rtol 1e-3) admits expected values written with 4 decimals
        np.testing.assert_allclose(actual, expected, rtol=max(RTOL, case.rtol),
                                   atol=max(ATOL, case.atol), err_msg=value.name)


def test_backend_case_census():
    """How many cases run, and why the others are skipped (logged; asserts the rules
    leave a substantial set of cases running)."""
    supported = _supported_ops()
    reasons = collections.Counter()
    running = []
    for case in all_cases():
        reason = skip_reason(case, supported)
        if reason is None:
            running.append(case.name)
        else:
            reasons["op not supported" if reason.startswith("op ") else reason] += 1
    log.info("ONNX backend node cases: %d run, %d skipped", len(running), sum(reasons.values()))
    for reason, count in reasons.most_common():
        log.info("  %4d skipped: %s", count, reason)
    assert len(running) >= 200
    assert sum(reasons.values()) <= MAX_SKIPPED, (
        f"{sum(reasons.values())} cases are skipped, more than the {MAX_SKIPPED} allowed")
