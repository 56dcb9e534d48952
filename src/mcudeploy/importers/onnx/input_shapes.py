"""Static shapes for the graph inputs, then ONNX shape inference for everything else.

Rules for each graph input (initializers listed as inputs are constants, not inputs):

* a shape given by the user (``--input-shape NAME=1,3,224,224``) wins;
* a dynamic batch dimension (dim 0 symbolic, missing or ``<= 0``) becomes 1, with a note
  (:mod:`mcudeploy.notes`: kept with the run, printed with ``-v``);
* any other dynamic dimension is refused (``UnsupportedError`` suggesting ``--input-shape``);
* a static dimension ``<= 0`` elsewhere is a broken model (``GraphError``).

The fixed shapes are written back into the model, stale intermediate / output shapes are
dropped, and ``onnx.shape_inference`` runs again so internal shapes follow the inputs.
"""
from __future__ import annotations

import logging
import math
from pathlib import Path

import onnx
from onnx import shape_inference

from ...errors import GraphError, UnsupportedError, UsageError
from ...ir import DType
from ...limits import check_budget
from ...notes import note

log = logging.getLogger(__name__)

InputSpec = tuple[DType, tuple[int, ...]]
MAX_DIMENSION = 2 ** 31 - 1


def real_inputs(graph: onnx.GraphProto) -> list[onnx.ValueInfoProto]:
    """Graph inputs that are not initializers (those are constants)."""
    initializers = {tensor.name for tensor in graph.initializer}
    return [value for value in graph.input if value.name not in initializers]


def element_dtype(path: Path, what: str, elem_type: int) -> DType:
    """The IR dtype of an ONNX element type; ``UnsupportedError`` for one the IR lacks."""
    try:
        return DType.from_numpy(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except (ValueError, KeyError, TypeError) as err:
        try:
            name = onnx.TensorProto.DataType.Name(elem_type) if elem_type else "undefined"
        except ValueError:
            name = f"code {elem_type}"
        raise UnsupportedError(f"{path}: {what} has element type {name}, which mcudeploy does "
                               f"not support ({err})") from None


def _static_shape(path: Path, value: onnx.ValueInfoProto) -> tuple[int, ...]:
    tensor_type = value.type.tensor_type
    example = f"--input-shape {value.name}=1,3,224,224"
    if not tensor_type.HasField("shape"):
        raise UnsupportedError(f"{path}: input {value.name!r} has no declared shape (unknown "
                               f"rank); give it with {example}")
    shape = []
    for index, dim in enumerate(tensor_type.shape.dim):
        static = dim.WhichOneof("value") == "dim_value"
        size = dim.dim_value if static else None
        if index == 0 and (size is None or size <= 0):
            note(log, "%s: input %r has a dynamic batch dimension (%s); fixing it to 1",
                 path, value.name, dim.dim_param or size or "unnamed")
            size = 1
        elif size is None:
            raise UnsupportedError(
                f"{path}: input {value.name!r} has a dynamic dimension {index} "
                f"({dim.dim_param or 'unnamed'}); mcudeploy needs static shapes. Give the "
                f"shape on the command line, e.g. {example}")
        elif size <= 0:
            raise GraphError(f"{path}: input {value.name!r} declares dimension {index} as "
                             f"{size}; dimensions must be positive")
        shape.append(size)
    return tuple(shape)


def resolve_input_shapes(path: Path, graph: onnx.GraphProto,
                         overrides: dict[str, tuple[int, ...]]) -> dict[str, InputSpec]:
    """``{input name: (dtype, static shape)}`` following the rules in the module docstring."""
    inputs = real_inputs(graph)
    names = [value.name for value in inputs]
    unknown = sorted(set(overrides) - set(names))
    if unknown:
        raise UsageError(f"{path}: --input-shape names {', '.join(map(repr, unknown))}, but the "
                         f"model's inputs are {', '.join(map(repr, names))}")
    specs: dict[str, InputSpec] = {}
    for value in inputs:
        if value.type.WhichOneof("value") != "tensor_type":
            raise UnsupportedError(f"{path}: input {value.name!r} is not a tensor "
                                   f"({value.type.WhichOneof('value')}); only tensors are supported")
        dtype = element_dtype(path, f"input {value.name!r}", value.type.tensor_type.elem_type)
        if value.name in overrides:
            shape = tuple(int(d) for d in overrides[value.name])
            declared = value.type.tensor_type.shape.dim
            if any(d <= 0 for d in shape) or (value.type.tensor_type.HasField("shape")
                                              and len(declared) != len(shape)):
                raise UsageError(f"{path}: --input-shape {value.name}={','.join(map(str, shape))}: "
                                 f"the input has rank {len(declared)} and dimensions must be "
                                 "positive")
        else:
            shape = _static_shape(path, value)
        _check_size(path, value.name, dtype, shape, given=value.name in overrides)
        specs[value.name] = (dtype, shape)
    return specs


def _check_size(path: Path, name: str, dtype: DType, shape: tuple[int, ...], *, given: bool) -> None:
    """Dimensions up to ``2**31 - 1`` and the input's bytes within the memory budget."""
    error = UsageError if given else UnsupportedError
    where = f"--input-shape {name}={','.join(map(str, shape))}" if given else f"input {name!r}"
    if any(d > MAX_DIMENSION for d in shape):
        raise error(f"{path}: {where}: dimensions must be at most {MAX_DIMENSION}")
    check_budget(math.prod(shape) * dtype.itemsize, f"{path}: {where} ({dtype}{list(shape)})", error)


def dynamic_dimensions(graph: onnx.GraphProto, specs: dict[str, InputSpec]) -> list[dict]:
    """The input dimensions the model leaves dynamic and the static size each got (from the
    batch rule or ``--input-shape``), as ``graph.metadata["dynamic_dimensions"]`` records them
    for lint and reports."""
    entries = []
    for value in real_inputs(graph):
        tensor_type = value.type.tensor_type
        dims = tensor_type.shape.dim if tensor_type.HasField("shape") else []
        for axis, dim in enumerate(dims):
            if dim.WhichOneof("value") != "dim_value" or dim.dim_value <= 0:
                entries.append({"input": value.name, "axis": axis, "symbol": dim.dim_param or None,
                                "value": specs[value.name][1][axis]})
    return entries


def infer_static_shapes(path: Path, model: onnx.ModelProto,
                        specs: dict[str, InputSpec]) -> onnx.ModelProto:
    """Write ``specs`` into the inputs, drop stale shapes, and run ONNX shape inference."""
    for value in model.graph.input:
        if value.name in specs:
            shape = value.type.tensor_type.shape
            shape.Clear()
            for size in specs[value.name][1]:
                shape.dim.add().dim_value = size
    for value in model.graph.output:
        if value.type.tensor_type.HasField("shape"):
            value.type.tensor_type.ClearField("shape")
    del model.graph.value_info[:]
    try:
        return shape_inference.infer_shapes(model, check_type=False, strict_mode=True,
                                            data_prop=True)
    except Exception as err:  # InferenceError and friends; lenient: warn and go on
        log.warning("%s: ONNX shape inference failed (%s); continuing with mcudeploy's own "
                    "shape inference", path, str(err).strip().splitlines()[0] if str(err) else err)
    try:
        return shape_inference.infer_shapes(model, check_type=False, strict_mode=False)
    except Exception:  # nothing to cross-check against; the IR infers every shape itself
        return model


def known_shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    """Fully static shapes ONNX shape inference found, by tensor name (for cross-checks)."""
    shapes: dict[str, tuple[int, ...]] = {}
    for value in list(model.graph.value_info) + list(model.graph.output):
        tensor_type = value.type.tensor_type
        if not tensor_type.HasField("shape"):
            continue
        dims = [d.dim_value if d.WhichOneof("value") == "dim_value" else None
                for d in tensor_type.shape.dim]
        static = [d for d in dims if d is not None and d > 0]
        if len(static) == len(dims):
            shapes[value.name] = tuple(static)
    return shapes
