"""Build tiny ONNX models in code (with ``onnx.helper``) for the importer tests, and run
them with the independent references (onnxruntime, and the IR's float executor)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

# onnxruntime 1.23 reads IR versions up to 11; onnx 1.19 writes 12 by default.
IR_VERSION = 10

Shape = Sequence[int | str | None]


def elem_type(dtype: Any) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def make_model(nodes: list[onnx.NodeProto], inputs: dict[str, Shape],
               outputs: dict[str, Any] | list[str], initializers: dict[str, np.ndarray] | None = None,
               *, opset: int = 17, name: str = "test",
               input_dtypes: dict[str, Any] | None = None) -> onnx.ModelProto:
    """A model of ``nodes``. ``inputs`` maps name -> shape (float32 unless ``input_dtypes``
    says otherwise); ``outputs`` is a list of float32 names or name -> dtype (output shapes
    are left to inference)."""
    input_infos = [helper.make_tensor_value_info(
        input_name, elem_type((input_dtypes or {}).get(input_name, np.float32)), shape)
        for input_name, shape in inputs.items()]
    if isinstance(outputs, list):
        outputs = {output: np.float32 for output in outputs}
    output_infos = [helper.make_tensor_value_info(output, elem_type(dtype), None)
                    for output, dtype in outputs.items()]
    tensors = [numpy_helper.from_array(np.asarray(array), tensor_name)
               for tensor_name, array in (initializers or {}).items()]
    graph = helper.make_graph(nodes, name, input_infos, output_infos, tensors)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=IR_VERSION, producer_name="mcudeploy-tests")


def single_op(op_type: str, inputs: dict[str, Shape], *, initializers: dict | None = None,
              attrs: dict | None = None, opset: int = 17, outputs: int | list[str] = 1,
              input_names: list[str] | None = None, name: str = "op") -> onnx.ModelProto:
    """One ``op_type`` node reading ``input_names`` (default: the inputs, then the
    initializers, in order) and writing ``y`` (or ``y0..yN`` / the given names)."""
    names = input_names if input_names is not None else list(inputs) + list(initializers or {})
    if isinstance(outputs, int):
        outputs = ["y"] if outputs == 1 else [f"y{i}" for i in range(outputs)]
    node = helper.make_node(op_type, names, outputs, name=name, **(attrs or {}))
    return make_model([node], inputs, outputs, initializers, opset=opset)


def save(model: onnx.ModelProto, folder: Path, name: str = "model.onnx") -> Path:
    path = Path(folder) / name
    path.write_bytes(model.SerializeToString())
    return path


def random_feeds(model: onnx.ModelProto, shapes: dict[str, tuple[int, ...]] | None = None,
                 seed: int = 0) -> dict[str, np.ndarray]:
    """Random float inputs (static dims; dynamic ones 1 unless ``shapes`` says otherwise)."""
    rng = np.random.default_rng(seed)
    initializers = {tensor.name for tensor in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor_type = value.type.tensor_type
        shape = (shapes or {}).get(value.name) or tuple(
            d.dim_value if d.dim_value > 0 else 1 for d in tensor_type.shape.dim)
        dtype = helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
        if np.issubdtype(dtype, np.floating):
            feeds[value.name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[value.name] = rng.integers(-5, 5, shape).astype(dtype)
    return feeds


def run_onnxruntime(model: onnx.ModelProto | Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime

    source = str(model) if isinstance(model, Path) else model.SerializeToString()
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def float_reference():
    """``mcudeploy.reference.run_float`` if it is available, else ``None``."""
    try:
        from mcudeploy.reference import run_float
    except ImportError:
        return None
    return run_float
