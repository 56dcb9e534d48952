"""Make uint8-in / float32-out versions of full-integer TFLite models, the vendor model-zoo
convention, the way TFLite's converter writes them.

    python tools/make_uint8_io_models.py OUT_DIR [MODEL.tflite ...]   # default: the shared int8 models
    uint8_float_io(model_bytes) -> bytes

TFLite's converter, asked for ``inference_input_type=tf.uint8`` with a float output
(``tensorflow/lite/tools/optimize/modify_model_interface.cc``), gives each int8 graph input
``x`` (scale ``s``, zero point ``z``) a uint8 input tensor with the same scale and zero point
``z + 128`` read by a QUANTIZE op that writes ``x`` (a requantization uint8 -> int8 by
exactly 1: ``q8 = q_u8 - 128``), and each int8 graph output ``y`` a DEQUANTIZE op writing a
float32 output (``r = s * (q - z)``). This script does exactly that to the flatbuffer: it
reads every table of the model with the ``tflite`` schema package (builtin options copied
field by field through the package's generated accessors), adds the two ops and their
tensors (the new uint8 / float32 tensors take the model's input / output names, the int8
ones get ``_int8`` appended; signature maps point at the new tensors) and writes the model
again with :mod:`mcudeploy.exporters.tflite_flatbuffer`. Nothing else changes: same
operators, tensors, weights and quantization parameters.

Each output folder gets ``MANIFEST.json``: source path and SHA-256, output SHA-256, tool.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import logging
import re
import sys
from pathlib import Path

import numpy as np
import tflite
from tflite.utils import BUILTIN_OPCODE2NAME

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
from mcudeploy.exporters.tflite_flatbuffer import (  # noqa: E402
    TENSOR_TYPES,
    FlatModel,
    FlatOpcode,
    FlatOperator,
    FlatTensor,
    build_flatbuffer,
)

log = logging.getLogger("make_uint8_io_models")
OPCODES = {name: code for code, name in BUILTIN_OPCODE2NAME.items()}
OPTION_NAMES = {value: name for name, value in vars(tflite.BuiltinOptions).items() if not name.startswith("_")}
SHARED_INT8_MODELS = ["mlperf_tiny/resnet8_int8.tflite", "mlperf_tiny/dscnn_kws_int8.tflite",
                      "mlperf_tiny/mobilenetv1_vww_int8.tflite", "mlperf_tiny/fc_autoencoder_int8.tflite",
                      "mlperf_tiny/streaming_wakeword_int8.tflite", "tflite_micro/person_detect_int8.tflite",
                      "tflite_micro/micro_speech_int8.tflite", "tflite_micro/hello_world_int8.tflite"]
OPERATOR_VERSIONS = {"QUANTIZE": 2, "DEQUANTIZE": 2}   # int8 quantize / int8 dequantize


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _options(operator) -> tuple[str | None, dict]:
    """The builtin options of ``operator``: table name and ``{snake_case_field: value}``."""
    table_name = OPTION_NAMES.get(operator.BuiltinOptionsType())
    if table_name in (None, "NONE"):
        return None, {}
    module = importlib.import_module(f"tflite.{table_name}")
    table = getattr(module, table_name)()
    raw = operator.BuiltinOptions()
    table.Init(raw.Bytes, raw.Pos)
    fields = {}
    for function in dir(module):
        if not function.startswith("Add") or function.startswith(table_name):
            continue
        accessor = function[3:]
        if hasattr(table, f"{accessor}AsNumpy"):
            if getattr(table, f"{accessor}IsNone")():
                continue
            fields[_snake(accessor)] = list(np.asarray(getattr(table, f"{accessor}AsNumpy")()).tolist())
            continue
        value = getattr(table, accessor)()
        if not isinstance(value, (bool, int, float, np.number)):
            raise ValueError(f"{table_name}.{accessor}: a {type(value).__name__} field cannot be copied")
        fields[_snake(accessor)] = value
    return table_name, fields


def _tensor(tensor) -> FlatTensor:
    if tensor.Sparsity() is not None:
        raise ValueError(f"tensor {tensor.Name().decode()!r} is sparse; not supported here")
    quant = tensor.Quantization()
    quantized = quant is not None and quant.ScaleLength() > 0
    return FlatTensor(tensor.Name().decode(), list(tensor.ShapeAsNumpy().tolist()) if tensor.ShapeLength() else [],
                      tensor.Type(), tensor.Buffer(),
                      list(quant.ScaleAsNumpy().tolist()) if quantized else None,
                      list(quant.ZeroPointAsNumpy().tolist()) if quantized else None,
                      quant.QuantizedDimension() if quantized else 0,
                      list(tensor.ShapeSignatureAsNumpy().tolist()) if tensor.ShapeSignatureLength() else None,
                      bool(tensor.IsVariable()))


def _operator(operator) -> FlatOperator:
    table, fields = _options(operator)
    custom = bytes(operator.CustomOptionsAsNumpy().tobytes()) if operator.CustomOptionsLength() else None
    return FlatOperator(operator.OpcodeIndex(), list(operator.InputsAsNumpy().tolist()),
                        list(operator.OutputsAsNumpy().tolist()), table, fields, custom)


def _buffers(model) -> list[bytes]:
    buffers = []
    for index in range(model.BuffersLength()):
        buffer = model.Buffers(index)
        if buffer.Offset() or buffer.Size():
            raise ValueError("buffers stored outside the flatbuffer are not supported here")
        buffers.append(buffer.DataAsNumpy().tobytes() if buffer.DataLength() else b"")
    return buffers


def _signature(model):
    if model.SignatureDefsLength() == 0:
        return None
    if model.SignatureDefsLength() > 1:
        raise ValueError("more than one signature")
    signature = model.SignatureDefs(0)
    maps = lambda count, get: [(get(i).Name().decode(), get(i).TensorIndex()) for i in range(count)]  # noqa: E731
    return (signature.SignatureKey().decode(), maps(signature.InputsLength(), signature.Inputs),
            maps(signature.OutputsLength(), signature.Outputs))


def read_flat_model(data: bytes) -> FlatModel:
    """Every table of a one-subgraph ``.tflite`` model as :class:`FlatModel` records."""
    model = tflite.Model.GetRootAs(data, 0)
    if model.SubgraphsLength() != 1:
        raise ValueError(f"{model.SubgraphsLength()} subgraphs; only one-subgraph models are rewritten")
    graph = model.Subgraphs(0)
    opcodes = []
    for index in range(model.OperatorCodesLength()):
        code = model.OperatorCodes(index)
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        opcodes.append(FlatOpcode(builtin, code.Version(), code.CustomCode().decode() if code.CustomCode() else None))
    return FlatModel(
        opcodes, [_tensor(graph.Tensors(i)) for i in range(graph.TensorsLength())],
        [_operator(graph.Operators(i)) for i in range(graph.OperatorsLength())],
        list(graph.InputsAsNumpy().tolist()), list(graph.OutputsAsNumpy().tolist()), _buffers(model),
        model.Description().decode() if model.Description() else "",
        graph.Name().decode() if graph.Name() else "main",
        [(model.Metadata(i).Name().decode(), model.Metadata(i).Buffer()) for i in range(model.MetadataLength())],
        _signature(model))


def _opcode_index(model: FlatModel, name: str) -> int:
    code = OPCODES[name]
    for index, opcode in enumerate(model.opcodes):
        if opcode.builtin_code == code and opcode.custom_code is None:
            opcode.version = max(opcode.version, OPERATOR_VERSIONS[name])
            return index
    model.opcodes.append(FlatOpcode(code, OPERATOR_VERSIONS[name]))
    return len(model.opcodes) - 1


def _edge_tensor(model: FlatModel, original: int, dtype: str, quantized: bool) -> int:
    """A new tensor taking the name of tensor ``original`` (renamed ``..._int8``)."""
    old = model.tensors[original]
    new = FlatTensor(old.name, list(old.shape), TENSOR_TYPES[dtype], 0,
                     list(old.scale) if quantized else None,
                     [int(z) + 128 for z in old.zero_point] if quantized else None,
                     old.quantized_dimension, old.shape_signature)
    old.name = f"{old.name}_int8"
    model.buffers.append(b"")
    new.buffer = len(model.buffers) - 1
    model.tensors.append(new)
    return len(model.tensors) - 1


def uint8_float_io(data: bytes) -> bytes:
    """The model with uint8 inputs and float32 outputs (module docstring)."""
    model = read_flat_model(data)
    for index in model.inputs + model.outputs:
        tensor = model.tensors[index]
        if tensor.type != TENSOR_TYPES["int8"] or tensor.scale is None or len(tensor.scale) != 1:
            raise ValueError(f"tensor {tensor.name!r}: graph inputs and outputs must be per-tensor int8")
    quantize, dequantize = _opcode_index(model, "QUANTIZE"), _opcode_index(model, "DEQUANTIZE")
    renamed: dict[int, int] = {}
    front, back = [], []
    for index in model.inputs:
        renamed[index] = _edge_tensor(model, index, "uint8", quantized=True)
        front.append(FlatOperator(quantize, [renamed[index]], [index], "QuantizeOptions", {}))
    for index in model.outputs:
        renamed[index] = _edge_tensor(model, index, "float32", quantized=False)
        back.append(FlatOperator(dequantize, [index], [renamed[index]], "DequantizeOptions", {}))
    model.operators = front + model.operators + back
    model.inputs = [renamed[i] for i in model.inputs]
    model.outputs = [renamed[i] for i in model.outputs]
    if model.signature is not None:
        key, inputs, outputs = model.signature
        model.signature = (key, [(n, renamed.get(i, i)) for n, i in inputs], [(n, renamed.get(i, i)) for n, i in outputs])
    return build_flatbuffer(model)


def output_name(source: Path) -> str:
    return source.name.replace("_int8.tflite", ".tflite").replace(".tflite", "_uint8_float.tflite")


def make_models(sources: list[Path], folder: Path) -> list[Path]:
    """Write the uint8-in / float-out version of every source into ``folder``, with its manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest, written = [], []
    for source in sources:
        data = source.read_bytes()
        result = uint8_float_io(data)
        path = folder / output_name(source)
        path.write_bytes(result)
        written.append(path)
        manifest.append({"output": path.name, "source": str(source), "source_sha256": hashlib.sha256(data).hexdigest(),
                         "sha256": hashlib.sha256(result).hexdigest(), "tool": "tools/make_uint8_io_models.py"})
        log.info("wrote %s", path)
    (folder / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("models", type=Path, nargs="*", help="default: the shared full-integer models")
    arguments = parser.parse_args()
    shared = ROOT.parent / "shared" / "models"
    sources = arguments.models or [shared / relative for relative in SHARED_INT8_MODELS]
    make_models(sources, arguments.output)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    main()
