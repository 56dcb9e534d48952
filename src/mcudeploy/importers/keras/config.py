"""The model config of a Keras file -> :class:`ModelSpec`: layers, their calls and the
tensors they read, the same records for tf.keras 2.x and Keras 3 configs.

* A **Functional** model lists its layers with ``inbound_nodes``: one entry per call of the
  layer. tf.keras 2.x writes a call as a list of ``[layer, node_index, tensor_index,
  kwargs]`` connections (several for a merge layer such as Add; TF-op layers write a single
  connection, not in a list, tensors among the kwargs as ``[layer, node, tensor]`` and a
  constant first argument as ``["_CONSTANT_VALUE", -1, value]``; their node index may count
  calls made outside the model, so a layer called once is read by any index).
  Keras 3 writes ``{"args": [...], "kwargs": {...}}`` with tensors as
  ``{"class_name": "__keras_tensor__", "config": {"keras_history": [layer, node, tensor]}}``.
* A **Sequential** model is a chain: each layer reads the previous one's output; its input
  shape comes from an ``InputLayer``, the first layer's ``batch_input_shape`` or the
  model's ``build_input_shape``.
* A layer whose class is a model (``Functional``, ``Model``, ``Sequential``) is a nested
  model, parsed recursively.

A call's arguments keep their structure: a merge layer's single argument is a list of
:class:`TensorRef`; constants stay as they are.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ModelFormatError

MODEL_CLASSES = ("Functional", "Model", "Sequential")
CONSTANT_MARKER = "_CONSTANT_VALUE"


@dataclass(frozen=True)
class TensorRef:
    """Output ``index`` of call ``node`` of layer ``layer``."""

    layer: str
    node: int
    index: int


@dataclass
class Call:
    args: list[Any]
    kwargs: dict[str, Any]


@dataclass
class LayerSpec:
    class_name: str
    name: str
    config: dict[str, Any]
    calls: list[Call]
    module: str | None = None
    registered_name: str | None = None
    model: "ModelSpec | None" = None     # a nested model's own spec
    saveable_name: str = ""              # its group in a tf_keras .keras weights file


def snake_case(class_name: str) -> str:
    """Keras's ``to_snake_case`` of a class name (``BatchNormalization`` ->
    ``batch_normalization``, ``ReLU`` -> ``re_lu``)."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", class_name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def assign_saveable_names(layers: list["LayerSpec"]) -> None:
    """The group names tf_keras's ``.keras`` weights file gives the layers of one model (it
    records no layer names): the snake-case class name, ``_1``, ``_2``... for repeats, in
    the model's layer order."""
    used: dict[str, int] = {}
    for layer in layers:
        base = snake_case(layer.class_name)
        count = used.get(base, -1) + 1
        used[base] = count
        layer.saveable_name = base if count == 0 else f"{base}_{count}"


@dataclass
class ModelSpec:
    name: str
    layers: list[LayerSpec]
    inputs: list[TensorRef]
    outputs: list[TensorRef]
    input_shapes: dict[str, list[Any]] = field(default_factory=dict)   # InputLayer -> batch shape


def parse_model(path: Path, config: dict[str, Any]) -> ModelSpec:
    """The :class:`ModelSpec` of a model config (``{"class_name": ..., "config": ...}``)."""
    class_name = config.get("class_name")
    body = config.get("config")
    if not isinstance(body, dict) or not isinstance(body.get("layers"), list):
        raise ModelFormatError(f"{path}: the model config ({class_name}) has no layer list; "
                               "save the model again with model.save()")
    name = str(body.get("name", "model"))
    if class_name == "Sequential":
        return _sequential(path, name, body)
    return _functional(path, name, body)


def _layer(path: Path, entry: Any, calls: list[Call]) -> LayerSpec:
    if not isinstance(entry, dict) or not isinstance(entry.get("config", {}), dict):
        raise ModelFormatError(f"{path}: a layer entry of the model config is not an object")
    config = entry.get("config") or {}
    name = str(entry.get("name") or config.get("name") or entry.get("class_name", "layer"))
    spec = LayerSpec(str(entry.get("class_name")), name, config, calls,
                     entry.get("module"), entry.get("registered_name"))
    if spec.class_name in MODEL_CLASSES:
        spec.model = parse_model(path, entry)
    return spec


def _ref(path: Path, item: Any) -> TensorRef:
    if (not isinstance(item, (list, tuple)) or len(item) < 3 or not isinstance(item[0], str)
            or not all(isinstance(i, int) for i in item[1:3])):
        raise ModelFormatError(f"{path}: a tensor reference {str(item)[:80]} is not "
                               "[layer, node, tensor] (corrupt model config)")
    return TensorRef(item[0], item[1], item[2])


def _is_legacy_ref(item: Any) -> bool:
    return (isinstance(item, list) and len(item) in (3, 4) and isinstance(item[0], str)
            and isinstance(item[1], int) and isinstance(item[2], int))


def _legacy_value(path: Path, item: Any) -> Any:
    """A kwargs value of a tf.keras 2 call: tensor references become :class:`TensorRef`."""
    if _is_legacy_ref(item):
        return _ref(path, item)
    if isinstance(item, list):
        return [_legacy_value(path, i) for i in item]
    if isinstance(item, dict):
        return {k: _legacy_value(path, v) for k, v in item.items()}
    return item


def _connection(path: Path, item: Any) -> Any:
    """A tensor reference, or the constant tf.keras 2 writes as ``["_CONSTANT_VALUE", -1, value]``."""
    if isinstance(item, list) and len(item) >= 3 and item[0] == CONSTANT_MARKER:
        return item[2]
    return _ref(path, item)


def _legacy_call(path: Path, node: Any) -> Call:
    connections = [node] if node and isinstance(node[0], str) else node
    if not isinstance(connections, list) or not connections:
        raise ModelFormatError(f"{path}: an inbound node {str(node)[:80]} has no inputs")
    refs = [_connection(path, c) for c in connections]
    kwargs = connections[0][3] if len(connections[0]) > 3 and isinstance(connections[0][3], dict) else {}
    args: list[Any] = [refs[0]] if len(refs) == 1 else [refs]
    return Call(args, {k: _legacy_value(path, v) for k, v in kwargs.items()})


def _keras3_value(path: Path, item: Any) -> Any:
    if isinstance(item, dict) and item.get("class_name") == "__keras_tensor__":
        return _ref(path, (item.get("config") or {}).get("keras_history"))
    if isinstance(item, list):
        return [_keras3_value(path, i) for i in item]
    if isinstance(item, dict):
        return {k: _keras3_value(path, v) for k, v in item.items()}
    return item


def _calls(path: Path, nodes: Any) -> list[Call]:
    if not isinstance(nodes, list):
        raise ModelFormatError(f"{path}: inbound_nodes {str(nodes)[:80]} is not a list")
    calls = []
    for node in nodes:
        if isinstance(node, dict):
            args = node.get("args", [])
            kwargs = node.get("kwargs", {})
            calls.append(Call(_keras3_value(path, list(args)), _keras3_value(path, dict(kwargs))))
        else:
            calls.append(_legacy_call(path, node))
    return calls


def _refs(path: Path, items: Any) -> list[TensorRef]:
    if isinstance(items, list) and items and isinstance(items[0], str):
        items = [items]
    if not isinstance(items, list) or not items:
        raise ModelFormatError(f"{path}: the model config lists no input or output layers")
    return [_ref(path, i) for i in items]


def _input_shape(config: dict[str, Any]) -> list[Any] | None:
    for key in ("batch_shape", "batch_input_shape"):
        if isinstance(config.get(key), list):
            return list(config[key])
    return None


def _functional(path: Path, name: str, body: dict[str, Any]) -> ModelSpec:
    layers = [_layer(path, entry, _calls(path, entry.get("inbound_nodes", [])))
              for entry in body["layers"]]
    spec = ModelSpec(name, layers, _refs(path, body.get("input_layers")),
                     _refs(path, body.get("output_layers")))
    assign_saveable_names(layers)
    for layer in layers:
        shape = _input_shape(layer.config) if layer.class_name == "InputLayer" else None
        if shape is not None:
            spec.input_shapes[layer.name] = shape
    return spec


def _sequential(path: Path, name: str, body: dict[str, Any]) -> ModelSpec:
    entries = list(body["layers"])
    if not entries:
        raise ModelFormatError(f"{path}: the Sequential model {name!r} has no layers")
    first = entries[0]
    if isinstance(first, dict) and first.get("class_name") == "InputLayer":
        input_name = str((first.get("config") or {}).get("name", f"{name}_input"))
        shape = _input_shape(first.get("config") or {})
        entries = entries[1:]
    else:
        input_name = f"{name}_input"
        config = (first.get("config") or {}) if isinstance(first, dict) else {}
        shape = _input_shape(config) or body.get("build_input_shape")
    if not isinstance(shape, list):
        raise ModelFormatError(f"{path}: the Sequential model {name!r} does not record its input "
                               "shape; build it with an Input layer before saving")
    layers = [LayerSpec("InputLayer", input_name, {"batch_shape": shape}, [])]
    previous = TensorRef(input_name, 0, 0)
    for entry in entries:
        layer = _layer(path, entry, [Call([previous], {})])
        layers.append(layer)
        previous = TensorRef(layer.name, 0, 0)
    assign_saveable_names(layers[1:])    # a Sequential's layers do not include its input
    return ModelSpec(name, layers, [TensorRef(input_name, 0, 0)], [previous],
                     {input_name: shape})
