"""The weights of a Keras model, by layer: ``WeightStore`` maps a layer's path (the names of
the nested models that hold it, then its own name) to its arrays in the layer's own order
(``kernel, bias``; ``gamma, beta, moving_mean, moving_variance``; ...).

Two layouts are read, both with h5py:

* legacy HDF5 (tf.keras 2.x and Keras 3 ``model.save("x.h5")``): group ``model_weights``,
  attribute ``layer_names``; each layer group lists ``weight_names`` (``conv1/kernel:0``,
  Keras 3 ``conv1/kernel``; a nested model's group lists its layers' weights,
  ``inner_conv/kernel:0``). The name before the variable name is the owning layer
  (:func:`_legacy_key`).
* ``model.weights.h5`` of a ``.keras`` zip: ``layers/<attr>/vars/<i>`` with the layer's
  name in the ``vars`` group's ``name`` attribute (Keras 3), nested models under
  ``layers/<attr>/layers/...``. tf_keras writes no name: the key is then ``#<attr>``, the
  snake-case class name Keras numbered (:func:`.config.assign_saveable_names`).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ModelFormatError
from ...limits import check_budget

LayerPath = tuple[str, ...]
_VARIABLE_SUFFIX = re.compile(r":\d+$")


class WeightStore:
    """Arrays by layer path; a layer inside nested models is found by its full path, or by
    (outermost model, own name) as legacy HDF5 files store it."""

    def __init__(self) -> None:
        self._arrays: dict[LayerPath, list[np.ndarray]] = {}
        self.total_bytes = 0

    def add(self, path: Path, key: LayerPath, array: np.ndarray) -> None:
        check_budget(array.nbytes + self.total_bytes, f"{path}: the weights of layer "
                     f"{'/'.join(key)!r}", ModelFormatError, "mcudeploy deploys models for "
                     "microcontrollers")
        self.total_bytes += array.nbytes
        self._arrays.setdefault(key, []).append(array)

    def arrays(self, key: LayerPath, saveable: LayerPath = ()) -> list[np.ndarray]:
        """The arrays of the layer at ``key`` (or at ``saveable``, its ``#<attr>`` path;
        empty when it has none)."""
        if saveable and saveable in self._arrays:
            return self._arrays[saveable]
        if key in self._arrays:
            return self._arrays[key]
        if len(key) > 2 and (key[0], key[-1]) in self._arrays:
            return self._arrays[(key[0], key[-1])]
        return []

    def __len__(self) -> int:
        return len(self._arrays)


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _array(path: Path, dataset: Any, where: str) -> np.ndarray:
    if not hasattr(dataset, "shape") or not hasattr(dataset, "dtype"):
        raise ModelFormatError(f"{path}: weight {where!r} is not an array (corrupt file)")
    check_budget(dataset.size * dataset.dtype.itemsize, f"{path}: weight {where!r}",
                 ModelFormatError, "mcudeploy deploys models for microcontrollers")
    array = np.asarray(dataset[()])
    if array.dtype.kind in "iub":   # counters (Normalization's count), kept as stored
        return array
    if array.dtype.kind != "f":
        raise ModelFormatError(f"{path}: weight {where!r} has dtype {array.dtype}; numbers "
                               "were expected (corrupt file?)")
    return array.astype(np.float32, copy=False)


def read_legacy_weights(path: Path, file: Any) -> WeightStore:
    """The weights of a legacy Keras HDF5 file (see the module docstring)."""
    store = WeightStore()
    root = file["model_weights"] if "model_weights" in file else file
    for group_name in (_text(n) for n in root.attrs.get("layer_names", [])):
        if group_name not in root:
            raise ModelFormatError(f"{path}: the weights of layer {group_name!r} are listed but "
                                   "missing (truncated or corrupt file)")
        group = root[group_name]
        for weight_name in (_text(n) for n in group.attrs.get("weight_names", [])):
            try:
                dataset = group[weight_name]
            except KeyError:
                raise ModelFormatError(f"{path}: weight {weight_name!r} of layer {group_name!r} "
                                       "is listed but missing (truncated or corrupt file)") from None
            store.add(path, _legacy_key(group_name, weight_name), _array(path, dataset, weight_name))
    return store


def _legacy_key(group_name: str, weight_name: str) -> LayerPath:
    """The layer a legacy weight belongs to: the group's own layer when the name (without
    ``:0`` and the variable name) is the group's, possibly after a model prefix
    (``sequential/dense``), else the layer of that name inside the group's nested model.
    Layer names may hold ``/`` themselves (MobileNetV3's ``Conv/BatchNorm``)."""
    owner = _VARIABLE_SUFFIX.sub("", weight_name).rpartition("/")[0]
    if not owner or owner == group_name or owner.endswith("/" + group_name):
        return (group_name,)
    return (group_name, owner.removeprefix(group_name + "/"))


def read_keras_weights(path: Path, file: Any) -> WeightStore:
    """The weights of a Keras 3 ``model.weights.h5`` (see the module docstring)."""
    store = WeightStore()
    layers = file.get("layers")
    if layers is not None:
        for name in layers:
            _read_saveable(path, store, layers[name], ())
    return store


def _read_saveable(path: Path, store: WeightStore, group: Any, prefix: LayerPath) -> None:
    if not hasattr(group, "keys"):
        return
    variables = group.get("vars")
    key = prefix
    if variables is not None:
        # Keras 3 names the layer; tf_keras does not: then the group's own name, marked "#"
        name = variables.attrs.get("name")
        key = prefix + (_text(name) if name is not None else "#" + group.name.rsplit("/", 1)[-1],)
        indices = sorted(int(i) for i in variables if i.isdigit())
        for index in indices:
            store.add(path, key, _array(path, variables[str(index)], f"{'/'.join(key)}/{index}"))
    children = group.get("layers")
    if children is not None:
        for name in children:
            _read_saveable(path, store, children[name], key)
