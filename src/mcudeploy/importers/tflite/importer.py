"""``import_tflite``: a TFLite model file -> a verified IR graph.

Steps: read the flatbuffer into records (:mod:`.reader`); refuse what cannot be imported
(control flow, sparse / variable tensors); give every graph input a static shape (a
dynamic batch becomes 1 with a warning, other dynamic dimensions need ``input_shapes``);
convert operators in file order with the converter registered for each builtin op, folding
what the operator computes from constants (:mod:`.folding`); bind the graph outputs;
record metadata; run the IR verifier.

Only subgraph 0 is imported. Output values keep the stored tensor shapes, checked against
IR shape inference node by node; when the caller changes an input shape (or the file stores
no static intermediate shapes), output shapes come from shape inference instead.
"""
from __future__ import annotations

import logging
import math
from pathlib import Path

from ...errors import ModelFormatError, UnsupportedError, UsageError
from ...ir import Graph, verify
from ...notes import note
from . import ops  # noqa: F401  (registers the converters)
from .common import CONVERTERS
from .context import ConversionContext
from .folding import fold_operator
from .reader import ModelRecord, TensorRecord, read_model
from .tensors import check_shape, ir_dtype, quant_params, tensor_label

log = logging.getLogger(__name__)
CONTROL_FLOW_OPS = ("IF", "WHILE", "CALL", "CALL_ONCE")
InputShapes = dict[str, tuple[int, ...]]


def import_tflite(path: Path, data: bytes, *, input_shapes: InputShapes) -> Graph:
    """Import the TFLite model ``data`` (the bytes of ``path``) as an IR graph."""
    model = read_model(path, data)
    _check_model(path, model)
    graph = Graph(path.stem)
    graph.metadata.update(format="tflite", tflite_schema_version=model.version,
                          description=model.description, subgraphs=model.subgraph_count,
                          hybrid=False)
    changed = _add_inputs(path, model, graph, dict(input_shapes))
    infer_shapes = changed or any(d <= 0 for t in model.tensors for d in t.shape)
    ctx = ConversionContext(path, model, graph, infer_shapes=infer_shapes)
    for value, index in zip(graph.inputs, model.inputs):
        ctx.values[index] = value
    for operator in model.operators:
        _convert(ctx, operator)
    graph.outputs = [_output(ctx, index) for index in model.outputs]
    _report_weights(path, graph, ctx)
    verify(graph)
    return graph


def _check_model(path: Path, model: ModelRecord) -> None:
    if model.subgraph_count > 1:
        callers = [op for op in model.operators if op.op_name in CONTROL_FLOW_OPS]
        if callers:
            raise UnsupportedError(
                f"{path}: operator {callers[0].index} ({callers[0].op_name}) calls another "
                f"subgraph; control flow is not supported (the model has {model.subgraph_count} "
                "subgraphs, mcudeploy imports only the main one)")
        log.warning("%s: the model has %d subgraphs; only the main subgraph (0) is imported, "
                    "the others are not called by it", path, model.subgraph_count)
    if not model.inputs or not model.outputs:
        raise ModelFormatError(f"{path}: the main subgraph has no inputs or no outputs "
                               "(truncated or corrupt file)")
    for index in (*model.inputs, *model.outputs):
        if not 0 <= index < len(model.tensors):
            raise ModelFormatError(f"{path}: graph input/output refers to tensor {index}, the "
                                   f"model has {len(model.tensors)} (truncated or corrupt file)")
    for tensor in model.tensors:
        check_shape(path, tensor)
        if tensor.has_sparsity:
            raise UnsupportedError(f"{path}: {tensor_label(tensor)} is sparse; sparse tensors are "
                                   "not supported (convert the model without sparsification)")
        if tensor.is_variable:
            raise UnsupportedError(f"{path}: {tensor_label(tensor)} is a variable (stateful "
                                   "model); variables are not supported")


def _add_inputs(path: Path, model: ModelRecord, graph: Graph, input_shapes: InputShapes) -> bool:
    """Create the graph inputs; return True if any shape differs from the stored one."""
    names = [model.tensors[i].name or f"tensor_{i}" for i in model.inputs]
    unknown = sorted(set(input_shapes) - set(names))
    if unknown:
        raise UsageError(f"--input-shape names {', '.join(map(repr, unknown))}, but the inputs "
                         f"of {path} are {', '.join(map(repr, names))}")
    changed = False
    for name, index in zip(names, model.inputs):
        tensor = model.tensors[index]
        shape = _input_shape(path, tensor, name, input_shapes.get(name))
        changed = changed or shape != tensor.shape
        signature = tensor.shape_signature or tuple(tensor.shape)
        graph.metadata.setdefault("dynamic_dimensions", []).extend(
            {"input": name, "axis": axis, "symbol": None, "value": shape[axis]}
            for axis in _dynamic_axes(tuple(tensor.shape), signature))
        graph.add_input(name, ir_dtype(path, tensor), shape, quant=quant_params(path, tensor),
                        layout="NHWC" if len(shape) == 4 else None)
    return changed


def _dynamic_axes(stored: tuple[int, ...], signature: tuple[int, ...]) -> list[int]:
    """Axes that are -1 in the shape signature or non-positive in the stored shape (a
    signature of another rank makes every axis dynamic)."""
    if len(signature) != len(stored):
        return list(range(len(stored)))
    return [i for i, (d, s) in enumerate(zip(stored, signature)) if s < 0 or d <= 0]


def _input_shape(path: Path, tensor: TensorRecord, name: str,
                 given: tuple[int, ...] | None) -> tuple[int, ...]:
    """The static shape of a graph input (see the module docstring)."""
    stored = tuple(tensor.shape)
    signature = tensor.shape_signature or stored
    dynamic = _dynamic_axes(stored, signature)
    if given is not None:
        fixed = [i for i, d in enumerate(stored) if i not in dynamic and i < len(given)
                 and given[i] != d]
        if len(given) != len(stored) or fixed:
            raise UsageError(f"--input-shape {name}={','.join(map(str, given))}: input {name!r} of "
                             f"{path} has shape {list(signature)} (-1 = dynamic); only dynamic "
                             "dimensions can be set, and the rank must match")
        return tuple(given)
    if any(i != 0 for i in dynamic):
        example = ",".join(str(d if d > 0 else 1) for d in signature)
        raise UnsupportedError(
            f"{path}: input {name!r} has dynamic dimension(s) {sorted(dynamic)} (shape signature "
            f"{list(signature)}); give a static shape with --input-shape {name}={example}")
    if dynamic:
        note(log, "%s: input %r has a dynamic batch dimension (shape signature %s); using batch 1",
             path, name, list(signature))
        return (1,) + stored[1:]
    return stored


def _convert(ctx: ConversionContext, operator) -> None:
    ctx.begin(operator)
    converter = CONVERTERS.get(operator.op_name)
    if converter is None:
        if operator.op_name == "CUSTOM":
            what = f"custom op {operator.custom_code!r} is not supported"
        elif operator.op_name in CONTROL_FLOW_OPS:
            what = f"control flow ({operator.op_name}) is not supported"
        else:
            what = f"TFLite op {operator.op_name} is not supported"
        raise UnsupportedError(f"{ctx.where()}: {what}; supported TFLite ops: "
                               f"{', '.join(sorted(CONVERTERS))}")
    for key, value in operator.options.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise UnsupportedError(f"{ctx.where()}: option {key} is {value}; it must be a finite number")
    first_new_node = len(ctx.graph.nodes)
    converter(ctx)
    fold_operator(ctx, first_new_node)
    for position, index in enumerate(operator.outputs):
        if index >= 0 and index not in ctx.values:
            raise UnsupportedError(f"{ctx.where()}: output {position} (tensor {index}) is not "
                                   "produced by the conversion (an optional output that is not "
                                   "supported)")


def _output(ctx: ConversionContext, index: int):
    if index not in ctx.values:
        raise ModelFormatError(f"{ctx.path}: graph output {tensor_label(ctx.model.tensors[index])} "
                               "is not produced by any operator (corrupt file)")
    return ctx.values[index]


def _report_weights(path: Path, graph: Graph, ctx: ConversionContext) -> None:
    if ctx.hybrid_weights:
        graph.metadata["hybrid"] = True
        log.warning(
            "%s: this is a hybrid model (int8 weights, float activations), which TFLite Micro and "
            "full-integer MCU runtimes cannot run; it is imported as a float model (%d int8 "
            "weight tensors are dequantized by DequantizeLinear nodes). Use the full-integer "
            "model, or `mcudeploy quantize` the float model.", path, len(ctx.hybrid_weights))
    if ctx.float16_weights:
        graph.metadata["float16_weights"] = True
        log.warning("%s: float16-weight model: %d float16 constants are imported as float32 "
                    "constants (exact)", path, len(ctx.float16_weights))
