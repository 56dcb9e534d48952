"""Open a Keras model file: an HDF5 ``.h5`` (tf.keras 2.x or Keras 3 ``model.save``) or a
``.keras`` zip (Keras 3: ``config.json`` + ``model.weights.h5``) -> :class:`KerasFile`.

Only ``h5py`` and ``zipfile`` read the file; nothing runs TensorFlow or Keras. The model
config is the JSON the file stores (``model_config`` attribute of the HDF5 root, or
``config.json``); the weights are read by :mod:`.weights`. Every failure to read is a
``ModelFormatError`` naming the file and what to do.
"""
from __future__ import annotations

import io
import json
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ModelFormatError, UnsupportedError
from ...limits import check_budget
from .. import HDF5_SIGNATURE, ZIP_SIGNATURE
from .weights import WeightStore, read_keras_weights, read_legacy_weights

INSTALL_HINT = "pip install 'mcudeploy[keras]'"
# What h5py raises on a damaged file: OSError mostly, RuntimeError / KeyError / ValueError /
# TypeError from its lower layers (a damaged link table, heap or attribute message).
HDF5_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError, AttributeError, IndexError,
               OverflowError)
# What zipfile raises on a damaged archive (a bad CRC or header, an unknown compression
# method, an encrypted member, a truncated deflate stream).
ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, KeyError,
              RuntimeError, NotImplementedError)


@dataclass
class KerasFile:
    """What a Keras file holds: the model config (parsed JSON), its weights, the Keras
    version that wrote it and the container (``"h5"`` or ``"keras"``)."""

    config: dict[str, Any]
    weights: WeightStore
    keras_version: str
    container: str

    @property
    def keras_major(self) -> int:
        head = self.keras_version.split(".")[0]
        return int(head) if head.isdigit() else 2


def _h5py(path: Path) -> Any:
    try:
        import h5py
    except ImportError:
        raise UnsupportedError(f"{path}: reading Keras models needs h5py, which is not "
                               f"installed; run: {INSTALL_HINT}") from None
    return h5py


def read_keras_file(path: Path, data: bytes) -> KerasFile:
    """Parse ``data`` (the bytes of ``path``): HDF5 by signature, else a ``.keras`` zip."""
    if data.startswith(HDF5_SIGNATURE):
        return _read_h5(path, data)
    if data.startswith(ZIP_SIGNATURE):
        return _read_zip(path, data)
    raise ModelFormatError(f"{path}: not a Keras model (neither an HDF5 file nor a .keras zip)")


def _open_h5(path: Path, data: bytes, what: str) -> Any:
    h5py = _h5py(path)
    try:
        return h5py.File(io.BytesIO(data), "r")
    except HDF5_ERRORS as err:
        raise ModelFormatError(f"{path}: {what} is not a readable HDF5 file ({err}); the file "
                               "is truncated or corrupt, save the model again") from None


def _json(path: Path, text: Any, what: str) -> dict[str, Any]:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    try:
        config = json.loads(text)
    except (TypeError, ValueError) as err:
        raise ModelFormatError(f"{path}: the {what} is not valid JSON ({err}); save the "
                               "model again") from None
    if not isinstance(config, dict) or "class_name" not in config:
        raise ModelFormatError(f"{path}: the {what} does not describe a Keras model "
                               "(no class_name); save the model again with model.save()")
    return config


def _read_h5(path: Path, data: bytes) -> KerasFile:
    with _open_h5(path, data, "the file") as file:
        try:
            text = file.attrs.get("model_config")
            version = file.attrs.get("keras_version", b"")
            if text is None:
                raise ModelFormatError(
                    f"{path}: the HDF5 file holds weights but no model config (written by "
                    "save_weights?); mcudeploy needs the architecture too: save the whole model "
                    "with model.save('model.h5') or model.save('model.keras')")
            config = _json(path, text, "model config")
            weights = read_legacy_weights(path, file)
        except HDF5_ERRORS as err:
            raise ModelFormatError(f"{path}: cannot read the HDF5 file ({err}); the file is "
                                   "truncated or corrupt, save the model again") from None
    if isinstance(version, bytes):
        version = version.decode("utf-8", "replace")
    return KerasFile(config, weights, str(version), "h5")


def _member(path: Path, archive: zipfile.ZipFile, name: str) -> bytes:
    """One member's bytes, its declared size checked against the memory budget first."""
    check_budget(archive.getinfo(name).file_size, f"{path}: {name} inside the .keras file",
                 ModelFormatError, "mcudeploy deploys models for microcontrollers")
    return archive.read(name)


def _read_zip(path: Path, data: bytes) -> KerasFile:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            if "config.json" not in names:
                raise ModelFormatError(f"{path}: a zip file without config.json is not a .keras "
                                       "model; save the model with model.save('model.keras')")
            config = _json(path, _member(path, archive, "config.json"), "config.json")
            metadata = json.loads(_member(path, archive, "metadata.json")) if "metadata.json" in names else {}
            weight_bytes = _member(path, archive, "model.weights.h5") if "model.weights.h5" in names else None
    except ZIP_ERRORS as err:
        raise ModelFormatError(f"{path}: not a readable .keras zip ({err}); the file is "
                               "truncated or corrupt, save the model again") from None
    if weight_bytes is None:
        raise ModelFormatError(f"{path}: the .keras file has no model.weights.h5; save the "
                               "model again with model.save('model.keras')")
    with _open_h5(path, weight_bytes, "model.weights.h5 inside the .keras file") as file:
        try:
            weights = read_keras_weights(path, file)
        except HDF5_ERRORS as err:
            raise ModelFormatError(f"{path}: cannot read model.weights.h5 ({err}); the file is "
                                   "truncated or corrupt, save the model again") from None
    version = metadata.get("keras_version", "3") if isinstance(metadata, dict) else "3"
    return KerasFile(config, weights, str(version), "keras")
