"""``import_keras``: a Keras model file (``.h5`` or ``.keras``) -> a verified IR graph.

Steps: read the file's model config and weights (:mod:`.archive`, h5py only, no
TensorFlow); parse the config into layers and calls (:mod:`.config`); create the graph
inputs from the InputLayers (a ``None`` batch becomes 1, other ``None`` dimensions need
``input_shapes``); convert every layer call once its inputs exist, with the converter
registered for its class (:mod:`.registry`; a nested model's layers are converted in place,
named ``<model>/<layer>``); bind the outputs; run the IR verifier.

Keras tensors are channels_last, so rank-4 values are NHWC from the start, as in the
TFLite importer: no Transpose is added. Lambda layers (Python bytecode), custom layer
classes and layer classes without a converter are refused by name.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import GraphError, ModelFormatError, UnsupportedError, UsageError
from ...ir import DType, Graph, Value, verify
from . import layers as _layers  # noqa: F401  (registers the converters)
from .archive import read_keras_file
from .config import MODEL_CLASSES, LayerSpec, ModelSpec, TensorRef, parse_model
from .context import KerasConversion, LayerContext
from .registry import CONVERTERS, OPERATION_MODULE, OPERATIONS, converter_of

InputShapes = dict[str, tuple[int, ...]]
Produced = dict[tuple[str, int], list[Value]]
EXPORT_HINT = "or export the model to TFLite first (mcudeploy imports .tflite files)"
# What reading a config value of the wrong type raises (a list where Keras writes a number...).
MALFORMED = (TypeError, ValueError, AttributeError, KeyError, IndexError)


def import_keras(path: Path, data: bytes, *, input_shapes: InputShapes) -> Graph:
    """Import the Keras model ``data`` (the bytes of ``path``) as an IR graph."""
    keras_file = read_keras_file(path, data)
    if keras_file.config.get("class_name") not in MODEL_CLASSES:
        raise UnsupportedError(f"{path}: the file holds a {keras_file.config.get('class_name')!r}: a "
                               "subclassed model or a single layer, whose layer graph is Python code "
                               f"and not in the file; mcudeploy imports {', '.join(MODEL_CLASSES)} "
                               f"models: rebuild it with the functional API, {EXPORT_HINT}")
    try:
        spec = parse_model(path, keras_file.config)
    except MALFORMED as err:   # a value of another type than Keras writes, deep in the JSON
        raise ModelFormatError(f"{path}: the model config is malformed ({type(err).__name__}: "
                               f"{err}); save the model again with model.save()") from None
    graph = Graph(spec.name)
    graph.metadata.update(format="keras", keras_version=keras_file.keras_version,
                          keras_container=keras_file.container)
    conversion = KerasConversion(path, graph, keras_file.weights, keras_file.keras_major)
    inputs = _add_inputs(path, spec, graph, dict(input_shapes))
    graph.outputs = _convert_model(conversion, spec, (), inputs)
    verify(graph)
    return graph


def _add_inputs(path: Path, spec: ModelSpec, graph: Graph, given: InputShapes) -> list[Value]:
    names = [ref.layer for ref in spec.inputs]
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise UsageError(f"--input-shape names {', '.join(map(repr, unknown))}, but the inputs "
                         f"of {path} are {', '.join(map(repr, names))}")
    values = []
    for name in names:
        layer = next((la for la in spec.layers if la.name == name), None)
        dtype = _dtype_name((layer.config if layer else {}).get("dtype"))
        if dtype != "float32":
            raise UnsupportedError(f"{path}: input {name!r} has dtype {dtype}; only float32 "
                                   "inputs are supported (cast inside the model)")
        shape = _input_shape(path, name, spec.input_shapes.get(name), given.get(name))
        values.append(graph.add_input(name, DType.FLOAT32, shape,
                                      layout="NHWC" if len(shape) == 4 else None))
    return values


def _dtype_name(dtype: Any) -> str:
    """``"float32"`` from a dtype string or a Keras 3 ``DTypePolicy`` object (None: float32)."""
    if isinstance(dtype, dict):
        dtype = (dtype.get("config") or {}).get("name")
    return str(dtype or "float32")


def _input_shape(path: Path, name: str, stored: list[Any] | None,
                 given: tuple[int, ...] | None) -> tuple[int, ...]:
    if stored is None or not stored:
        raise ModelFormatError(f"{path}: input {name!r} has no recorded shape (corrupt config)")
    if given is not None:
        if len(given) != len(stored) or any(s is not None and s != g for s, g in zip(stored, given)):
            raise UsageError(f"--input-shape {name}={','.join(map(str, given))}: input {name!r} of "
                             f"{path} has shape {stored} (None = free); only free dimensions can "
                             "be set, and the rank must match")
        return tuple(given)
    if any(d is None for d in stored[1:]):
        example = ",".join(str(d or 1) for d in stored)
        raise UnsupportedError(f"{path}: input {name!r} has free dimension(s) (shape {stored}); "
                               f"give a static shape with --input-shape {name}={example}")
    if any(not isinstance(d, int) or d <= 0 for d in stored[1:]):
        raise ModelFormatError(f"{path}: input {name!r} has shape {stored} (corrupt config)")
    return (1, *stored[1:])


def _convert_model(conversion: KerasConversion, spec: ModelSpec, prefix: tuple[str, ...],
                   inputs: list[Value], saveable_prefix: tuple[str, ...] = ()) -> list[Value]:
    """Convert the layers of ``spec`` (the model at ``prefix``) reading ``inputs``; its outputs."""
    if len(inputs) != len(spec.inputs):
        raise UnsupportedError(f"{conversion.path}: model {'/'.join(prefix) or spec.name!r} takes "
                               f"{len(spec.inputs)} inputs, the call passes {len(inputs)}")
    layers = {layer.name: layer for layer in spec.layers}
    produced: Produced = {(ref.layer, 0): [value] for ref, value in zip(spec.inputs, inputs)}
    pending = [(layer, call) for layer in spec.layers if layer.class_name != "InputLayer"
               for call in range(len(layer.calls))]
    while pending:    # one pass when the config lists layers in order, as Keras writes it
        remaining = []
        for layer, call in pending:
            if _resolvable(conversion, layers, produced, layer.calls[call].args, layer.calls[call].kwargs):
                produced[(layer.name, call)] = _convert_call(conversion, layers, produced, layer, call,
                                                             prefix, saveable_prefix)
            else:
                remaining.append((layer, call))
        if len(remaining) == len(pending):
            layer = pending[0][0]
            raise GraphError(f"{conversion.path}: layer {'/'.join(prefix + (layer.name,))!r} reads "
                             "tensors that no layer of the model produces (a cycle, or a corrupt "
                             "config)")
        pending = remaining
    return [_lookup(conversion, layers, produced, ref) for ref in spec.outputs]


def _key(layers: dict[str, LayerSpec], produced: Produced, ref: TensorRef) -> tuple[str, int] | None:
    """Which produced call ``ref`` reads: its node, or the layer's only call (tf.keras 2 TF-op
    layers count nodes from outside the model)."""
    if (ref.layer, ref.node) in produced:
        return ref.layer, ref.node
    layer = layers.get(ref.layer)
    calls = 1 if layer is None or layer.class_name == "InputLayer" else len(layer.calls)
    if calls == 1 and (ref.layer, 0) in produced:
        return ref.layer, 0
    return None


def _refs(item: Any) -> list[TensorRef]:
    if isinstance(item, TensorRef):
        return [item]
    if isinstance(item, (list, tuple)):
        return [r for i in item for r in _refs(i)]
    if isinstance(item, dict):
        return [r for i in item.values() for r in _refs(i)]
    return []


def _resolvable(conversion: KerasConversion, layers: dict[str, LayerSpec], produced: Produced,
                args: list[Any], kwargs: dict[str, Any]) -> bool:
    for ref in _refs([args, kwargs]):
        if ref.layer not in layers:
            raise ModelFormatError(f"{conversion.path}: a layer reads {ref.layer!r}, which is not a "
                                   "layer of the model (corrupt config)")
        if _key(layers, produced, ref) is None:
            return False
    return True


def _lookup(conversion: KerasConversion, layers: dict[str, LayerSpec], produced: Produced,
            ref: TensorRef) -> Value:
    key = _key(layers, produced, ref)
    if key is None or ref.index >= len(produced[key]):
        raise ModelFormatError(f"{conversion.path}: output {ref.index} of call {ref.node} of layer "
                               f"{ref.layer!r} does not exist (corrupt config)")
    return produced[key][ref.index]


def _resolve(conversion: KerasConversion, layers: dict[str, LayerSpec], produced: Produced, item: Any) -> Any:
    if isinstance(item, TensorRef):
        return _lookup(conversion, layers, produced, item)
    if isinstance(item, list):
        return [_resolve(conversion, layers, produced, i) for i in item]
    if isinstance(item, dict):
        return {k: _resolve(conversion, layers, produced, v) for k, v in item.items()}
    return item


def _convert_call(conversion: KerasConversion, layers: dict[str, LayerSpec], produced: Produced,
                  layer: LayerSpec, call: int, prefix: tuple[str, ...],
                  saveable_prefix: tuple[str, ...]) -> list[Value]:
    args = _resolve(conversion, layers, produced, layer.calls[call].args)
    kwargs = _resolve(conversion, layers, produced, layer.calls[call].kwargs)
    layer_path = prefix + (layer.name,)
    name = "/".join(layer_path) + (f"_call{call}" if call else "")
    saveable_path = saveable_prefix + ("#" + layer.saveable_name,)
    ctx = LayerContext(conversion, layer, layer_path, name, args, kwargs, saveable_path)
    if layer.model is not None:
        return _convert_model(conversion, layer.model, layer_path, ctx.inputs, saveable_path)
    converter = converter_of(layer.class_name, layer.module, layer.config)
    if converter is None:
        raise refusal(ctx)
    for value in ctx.inputs:
        if value.dtype != DType.FLOAT32:
            raise ctx.unsupported(f"input {value.type_str()} is not float32")
    try:
        return converter(ctx)
    except MALFORMED as err:   # converters check what Keras writes; this is a damaged config
        raise ModelFormatError(f"{ctx.where()}: its config holds a value of an unexpected type "
                               f"({type(err).__name__}: {err}); save the model again with "
                               "model.save()") from None


def refusal(ctx: LayerContext) -> UnsupportedError:
    """The error for a layer no converter handles: a Lambda, a custom class, an unknown one."""
    layer = ctx.layer
    if layer.class_name == "Lambda":
        return ctx.unsupported("a Lambda layer holds a Python function (bytecode), which "
                               "mcudeploy does not run; replace it with built-in Keras layers or "
                               f"tf.* operations (saved as TFOpLambda), {EXPORT_HINT}")
    registered = layer.registered_name or ""
    module = layer.module or ""
    if module.startswith(OPERATION_MODULE):
        return ctx.unsupported(f"the Keras operation {layer.class_name} ({module}) is not supported "
                               f"(supported: {', '.join(sorted(OPERATIONS))}); write it with Keras "
                               f"layers, {EXPORT_HINT}")
    if ">" in registered or ">" in layer.class_name or (module and not module.startswith("keras")):
        return ctx.unsupported(f"custom layer class {registered or layer.class_name!r} (module "
                               f"{module or 'unknown'}): mcudeploy reads only built-in Keras "
                               f"layers; rewrite it with built-in layers, {EXPORT_HINT}")
    return ctx.unsupported(f"Keras layer class {layer.class_name} is not supported (a custom "
                           "class, or a built-in one mcudeploy does not convert); supported: "
                           f"{', '.join(sorted(CONVERTERS))}; replace it with supported layers, "
                           f"{EXPORT_HINT}")
