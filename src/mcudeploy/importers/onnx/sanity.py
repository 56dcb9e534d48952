"""Checks of a parsed ONNX model made before onnx's C++ code or numpy touches it.

``onnx.checker``, ``onnx.shape_inference`` and the version converter are C++ that trusts
the model: a Conv or MaxPool with ``strides = [0, 0]`` divides by zero (SIGFPE: the process
dies before any Python ``except`` runs), ``GatherND`` with a negative ``batch_dims`` or a
``Scan`` without a body reads out of bounds, a ``DepthToSpace`` blocksize of ``2**62``
overflows. ``numpy_helper.to_array`` trusts the dims (a 1e9-element tensor with 4 bytes of
data). So, in this order, right after parsing:

* :func:`decode_names` - every string field that is not valid UTF-8 (protobuf then hands
  back ``bytes``) is decoded with ``\\xNN`` escapes for the bad bytes, the same way
  everywhere, so that names still match each other;
* :func:`check_graph` - element types of inputs / outputs / value_info are ONNX types;
  every node's op exists in the default domain and is not control flow; every node input is
  produced by a node, a graph input or an initializer (else :class:`GraphError`); every
  attribute holds a value of the type the op's schema declares (an ``INT`` where ``INTS``
  is due reaches a converter as the wrong Python type); the attributes the C++ shape inference
  divides by or indexes with are in range (:data:`POSITIVE_ATTRIBUTES`, ...); float
  attributes are finite; an op mcudeploy cannot convert whose inputs are computed at run
  time is refused now (it would be refused after shape inference anyway);
* :func:`check_tensors` (after external data is read) - every initializer and constant
  attribute tensor has a known element type, non-negative dims, exactly as much data as its
  dims say (``raw_data`` or the typed field), and fits the memory budget.
"""
from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Iterator

import onnx
from google.protobuf.descriptor import FieldDescriptor
from onnx import helper

from ...errors import GraphError, ModelFormatError, UnsupportedError
from ...limits import check_budget
from .converters import CONVERTERS
from .folding import NEVER_FOLDED

log = logging.getLogger(__name__)

CONTROL_FLOW = ("If", "Loop", "Scan")
ALWAYS_CONSTANT = ("Constant", "Shape", "Size")
MAX_INT_ATTRIBUTE = 2 ** 31 - 1
POSITIVE_ATTRIBUTES = ("strides", "dilations", "kernel_shape", "group", "blocksize")
NON_NEGATIVE_ATTRIBUTES = ("output_padding", "batch_dims")
MAX_BLOCKSIZE = 1 << 15
PACKED_TYPES = {onnx.TensorProto.INT4, onnx.TensorProto.UINT4}
if hasattr(onnx.TensorProto, "FLOAT4E2M1"):
    PACKED_TYPES.add(onnx.TensorProto.FLOAT4E2M1)
COMPLEX_TYPES = (onnx.TensorProto.COMPLEX64, onnx.TensorProto.COMPLEX128)
VALID_TYPES = frozenset(value for value in onnx.TensorProto.DataType.values()
                        if value != onnx.TensorProto.UNDEFINED)


# -- names --------------------------------------------------------------------------------
def _repeated(field: FieldDescriptor) -> bool:
    repeated = getattr(field, "is_repeated", None)   # protobuf >= 5.28; label() before
    return repeated if isinstance(repeated, bool) else field.label == FieldDescriptor.LABEL_REPEATED


def _decode_message(message, bad: list[str]) -> None:
    for field, value in message.ListFields():
        if field.type == FieldDescriptor.TYPE_STRING:
            if _repeated(field):
                for index, item in enumerate(value):
                    if isinstance(item, bytes):
                        value[index] = item.decode("utf-8", errors="backslashreplace")
                        bad.append(value[index])
            elif isinstance(value, bytes):
                setattr(message, field.name, value.decode("utf-8", errors="backslashreplace"))
                bad.append(getattr(message, field.name))
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            for item in (value if _repeated(field) else [value]):
                _decode_message(item, bad)


def decode_names(path: Path, model: onnx.ModelProto) -> None:
    """Replace every non-UTF-8 string of ``model`` by its ``\\xNN``-escaped decoding."""
    bad: list[str] = []
    _decode_message(model, bad)
    if bad:
        log.warning("%s: %d name(s) are not valid UTF-8, e.g. %r; the bad bytes are shown as "
                    "\\xNN escapes", path, len(bad), bad[0])


# -- graph structure ----------------------------------------------------------------------
def _element_type(path: Path, what: str, elem_type: int) -> None:
    if elem_type != onnx.TensorProto.UNDEFINED and elem_type not in VALID_TYPES:
        raise ModelFormatError(f"{path}: {what} has element type {elem_type}, which is not an "
                               "ONNX data type (corrupt file?)")


def _check_value_infos(path: Path, graph: onnx.GraphProto) -> None:
    for kind, values in (("input", graph.input), ("output", graph.output),
                         ("value_info", graph.value_info)):
        for value in values:
            if value.type.WhichOneof("value") == "tensor_type":
                _element_type(path, f"{kind} {value.name!r}", value.type.tensor_type.elem_type)


def _attribute_values(path: Path, node: onnx.NodeProto, attribute: onnx.AttributeProto):
    try:
        return helper.get_attribute_value(attribute)
    except Exception as err:   # type UNDEFINED, or the field of another type set
        raise ModelFormatError(f"{path}: node {node.name!r} ({node.op_type}): attribute "
                               f"{attribute.name!r} has no readable value ({err})") from None


def _schema(node: onnx.NodeProto, opset: int):
    try:
        return onnx.defs.get_schema(node.op_type, max_inclusive_version=max(opset, 1), domain="")
    except Exception:   # SchemaError: not defined at this opset
        return None


def _check_attribute(path: Path, node: onnx.NodeProto, attribute: onnx.AttributeProto,
                     schema) -> None:
    value = _attribute_values(path, node, attribute)
    where = f"{path}: node {node.name!r} ({node.op_type}): attribute {attribute.name!r}"
    declared = schema.attributes.get(attribute.name) if schema is not None else None
    if declared is not None and declared.type != attribute.type:
        raise ModelFormatError(f"{where} is of type {onnx.AttributeProto.AttributeType.Name(attribute.type)}; "
                               f"{node.op_type} declares it {onnx.AttributeProto.AttributeType.Name(declared.type)}")
    items = value if isinstance(value, list) else [value]
    if attribute.name in POSITIVE_ATTRIBUTES + NON_NEGATIVE_ATTRIBUTES:
        if not all(isinstance(item, int) for item in items):
            raise ModelFormatError(f"{where} must hold integers, got {value!r}")
        low = 1 if attribute.name in POSITIVE_ATTRIBUTES else 0
        high = MAX_BLOCKSIZE if attribute.name == "blocksize" else MAX_INT_ATTRIBUTE
        if any(not low <= item <= high for item in items):
            raise UnsupportedError(f"{where} is {value}; each value must be from {low} to {high}")
    elif attribute.type in (onnx.AttributeProto.FLOAT, onnx.AttributeProto.FLOATS):
        if not all(math.isfinite(item) for item in items):
            raise UnsupportedError(f"{where} is {value}; it must be a finite number")


def _inputs_known(path: Path, graph: onnx.GraphProto) -> None:
    known = {value.name for value in graph.input} | {tensor.name for tensor in graph.initializer}
    known |= {name for node in graph.node for name in node.output if name}
    for node in graph.node:
        for name in node.input:
            if name and name not in known:
                raise GraphError(f"{path}: node {node.name!r} ({node.op_type}) reads {name!r}, "
                                 "which no node, graph input or initializer provides")
    for value in graph.output:
        if value.name not in known:
            raise GraphError(f"{path}: graph output {value.name!r} is not produced by any node, "
                             "graph input or initializer")


def _constant_tensors(graph: onnx.GraphProto) -> set[str]:
    """Names that are (or fold to) constants, by the folding rule of :mod:`.folding`."""
    constant = {tensor.name for tensor in graph.initializer}
    for node in graph.node:   # file order; a node before its producer is judged not constant
        present = [name for name in node.input if name]
        if node.op_type in ALWAYS_CONSTANT or (
                node.op_type not in NEVER_FOLDED and present
                and all(name in constant for name in present)):
            constant.update(name for name in node.output if name)
    return constant


def _refuse_unconvertible(path: Path, graph: onnx.GraphProto) -> None:
    from .importer import unsupported_op_message  # the importer's own wording

    constant = _constant_tensors(graph)
    for node in graph.node:
        present = [name for name in node.input if name]
        if node.op_type in CONVERTERS or node.op_type in ALWAYS_CONSTANT:
            continue
        if present and all(name in constant for name in present):
            continue   # folded at import time, if the reference evaluator can
        raise UnsupportedError(f"{path}: node {node.name!r} ({node.op_type}): "
                               f"{unsupported_op_message(node)}")


def check_graph(path: Path, model: onnx.ModelProto, default_domains: tuple[str, ...]) -> None:
    """The structural checks of the module docstring (run before any onnx C++ code)."""
    graph = model.graph
    opset = next((int(entry.version) for entry in model.opset_import if entry.domain in default_domains), 0)
    _check_value_infos(path, graph)
    if graph.sparse_initializer:
        raise UnsupportedError(f"{path}: sparse initializers "
                               f"({graph.sparse_initializer[0].values.name!r}) are not "
                               "supported; save the weights dense")
    for node in graph.node:
        if node.domain not in default_domains:
            continue   # refused with its own message by parse.refuse_foreign_domains
        if node.op_type in CONTROL_FLOW:
            raise UnsupportedError(f"{path}: node {node.name!r} ({node.op_type}): control flow "
                                   "cannot be compiled to a static MCU schedule (fixed shapes, "
                                   "fixed order); unroll the loop / resolve the branch, or "
                                   "export the model without it")
        if not node.op_type or not onnx.defs.has(node.op_type):
            continue   # refused below as not supported
        schema = _schema(node, opset)
        for attribute in node.attribute:
            _check_attribute(path, node, attribute, schema)
    _inputs_known(path, graph)
    if all(node.domain in default_domains for node in graph.node):
        _refuse_unconvertible(path, graph)


# -- tensors ------------------------------------------------------------------------------
def graph_tensors(graph: onnx.GraphProto) -> Iterator[tuple[str, onnx.TensorProto]]:
    """``(description, tensor)`` of every initializer and constant attribute tensor."""
    for tensor in graph.initializer:
        yield f"initializer {tensor.name!r}", tensor
    for node in graph.node:
        for attribute in node.attribute:
            where = f"node {node.name!r} ({node.op_type}) attribute {attribute.name!r}"
            if attribute.HasField("t"):
                yield where, attribute.t
            for tensor in attribute.tensors:
                yield where, tensor


def _data_length(tensor: onnx.TensorProto) -> tuple[str, int]:
    """``(field, number of items)`` of the field that holds the tensor's data."""
    if tensor.HasField("raw_data"):
        return "raw_data", len(tensor.raw_data)
    field = helper.tensor_dtype_to_field(tensor.data_type)
    return field, len(getattr(tensor, field))


def _expected_length(tensor: onnx.TensorProto, field: str, count: int) -> int:
    if tensor.data_type in PACKED_TYPES:
        return (count + 1) // 2
    if field == "raw_data":
        return count * helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    return count * (2 if tensor.data_type in COMPLEX_TYPES else 1)


def check_tensor(path: Path, where: str, tensor: onnx.TensorProto) -> None:
    """Type, dims, data length and budget of one tensor (see the module docstring)."""
    label = f"{path}: {where}"
    if tensor.data_type not in VALID_TYPES:
        raise ModelFormatError(f"{label} has element type {tensor.data_type}, which is not an ONNX "
                               "data type (corrupt file?)")
    if any(d < 0 for d in tensor.dims):
        raise ModelFormatError(f"{label} has negative dimensions {list(tensor.dims)}")
    count = math.prod(tensor.dims)
    itemsize = helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    check_budget(count * itemsize, f"{label} ({list(tensor.dims)})", UnsupportedError)
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        return   # read (and checked again) by external_data first
    if tensor.data_type == onnx.TensorProto.STRING and tensor.HasField("raw_data"):
        raise ModelFormatError(f"{label}: a string tensor cannot store raw_data")
    field, length = _data_length(tensor)
    expected = _expected_length(tensor, field, count)
    if length != expected:
        raise ModelFormatError(
            f"{label} declares dims {list(tensor.dims)} ({count} elements of "
            f"{onnx.TensorProto.DataType.Name(tensor.data_type)}), which need {expected} "
            f"{'bytes' if field == 'raw_data' else 'values'} of {field}, but it holds {length} "
            "(truncated or corrupt file)")


def check_tensors(path: Path, model: onnx.ModelProto) -> None:
    for where, tensor in graph_tensors(model.graph):
        check_tensor(path, where, tensor)
