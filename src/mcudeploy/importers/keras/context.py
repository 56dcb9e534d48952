"""The state one Keras layer call's converter works with (:class:`LayerContext`), and the
state shared by the whole conversion (:class:`KerasConversion`).

A converter reads the call's tensor arguments (:attr:`LayerContext.inputs`, flattened in
argument order; :meth:`LayerContext.argument` for a keyword or positional one), the layer
config (:meth:`LayerContext.option`), the layer's weights in their Keras order
(:meth:`LayerContext.weights`), and emits IR nodes with :meth:`LayerContext.add`: the node
and its output value are named after the Keras layer (``conv1``), extra nodes of the same
layer ``conv1/<suffix>``; a layer inside a nested model is ``<model>/<layer>``. It returns
the layer's output values. Rank-4 values are NHWC (Keras's ``channels_last``), annotated as
the TFLite importer does.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ...errors import GraphError, UnsupportedError
from ...ir import DType, Graph, Value, get_op, infer_types
from .config import LayerSpec
from .weights import WeightStore


@dataclass
class KerasConversion:
    """What every converter of one file shares."""

    path: Path
    graph: Graph
    weights: WeightStore
    keras_major: int


class LayerContext:
    def __init__(self, conversion: KerasConversion, layer: LayerSpec, layer_path: tuple[str, ...],
                 name: str, args: list[Any], kwargs: dict[str, Any],
                 saveable_path: tuple[str, ...] = ()) -> None:
        self.conversion = conversion
        self.layer = layer
        self.layer_path = layer_path
        self.saveable_path = saveable_path   # "#<attr>" names of a tf_keras .keras file
        self.name = name
        self.args = args          # TensorRef resolved to Value
        self.kwargs = kwargs
        self.inputs: list[Value] = _flatten_values(args)

    @property
    def graph(self) -> Graph:
        return self.conversion.graph

    @property
    def keras_major(self) -> int:
        return self.conversion.keras_major

    def where(self) -> str:
        return f"{self.conversion.path}: layer {self.name!r} ({self.layer.class_name})"

    def unsupported(self, what: str) -> UnsupportedError:
        return UnsupportedError(f"{self.where()}: {what}")

    # -- reading ---------------------------------------------------------------------------
    def option(self, key: str, default: Any = None) -> Any:
        return self.layer.config.get(key, default)

    def input(self, position: int = 0) -> Value:
        if position >= len(self.inputs):
            raise self.unsupported(f"expects at least {position + 1} tensor input(s), the call "
                                   f"passes {len(self.inputs)}")
        return self.inputs[position]

    def single_input(self) -> Value:
        if len(self.inputs) != 1:
            raise self.unsupported(f"expects one tensor input, the call passes {len(self.inputs)}")
        return self.inputs[0]

    def stored_weights(self) -> list[np.ndarray]:
        return self.conversion.weights.arrays(self.layer_path, self.saveable_path)

    def weights(self, count_min: int, count_max: int | None = None) -> list[np.ndarray]:
        """The layer's arrays in Keras order; ``count_min``..``count_max`` of them expected."""
        arrays = self.stored_weights()
        count_max = count_min if count_max is None else count_max
        if not count_min <= len(arrays) <= count_max:
            expected = str(count_min) if count_min == count_max else f"{count_min} to {count_max}"
            raise self.unsupported(f"the file holds {len(arrays)} weight arrays for this layer, "
                                   f"{expected} expected (weights saved for another model?)")
        return arrays

    # -- emitting --------------------------------------------------------------------------
    def constant(self, array: np.ndarray, suffix: str) -> Value:
        return self.graph.add_constant(f"{self.name}/{suffix}",
                                       np.ascontiguousarray(np.asarray(array, dtype=np.float32)))

    def add(self, op: str, inputs: Sequence[Value | None], attrs: dict[str, Any] | None = None,
            *, suffix: str = "") -> Value:
        """Emit one node named after the layer (``<layer>/<suffix>`` with a suffix); its
        output value takes the node's name."""
        name = f"{self.name}/{suffix}" if suffix else self.name
        normalized = get_op(op).normalize_attrs(attrs or {}, node_name=name)
        try:
            infer_types(op, list(inputs), normalized)
        except (ValueError, IndexError, AttributeError) as err:
            raise GraphError(f"{self.where()}: cannot be converted to {op}: {err}") from None
        node = self.graph.add_node(op, inputs, attrs, name=name, output_names=[name])
        value = node.outputs[0]
        value.layout = "NHWC" if value.rank == 4 else None
        return value

    def require_rank(self, value: Value, *ranks: int) -> None:
        if value.rank not in ranks:
            raise self.unsupported(f"input {value.type_str()} must be rank "
                                   f"{' or '.join(map(str, ranks))}")

    def channels_last(self) -> None:
        if self.option("data_format", "channels_last") not in (None, "channels_last"):
            raise self.unsupported("data_format channels_first is not supported; build the "
                                   "model with channels_last (the Keras default)")

    def image_input(self, *, float_only: bool = False) -> Value:
        """The layer's one NHWC image input (``channels_last``, rank 4; float32 when
        ``float_only``): what every 2-D spatial layer reads."""
        self.channels_last()
        x = self.single_input()
        self.require_rank(x, 4)
        if float_only:
            self.check_float(x)
        return x

    def check_float(self, value: Value) -> None:
        if value.dtype != DType.FLOAT32:
            raise self.unsupported(f"input {value.type_str()} is not float32")


def _flatten_values(items: Any) -> list[Value]:
    if isinstance(items, Value):
        return [items]
    if isinstance(items, (list, tuple)):
        return [v for item in items for v in _flatten_values(item)]
    return []
