"""The values of a sweep's model axis: model files, and models made by generator callables.

    sources = model_sources(spec)                  # files first, then each generator's parameter sets
    blob = materialise(source, cache)              # -> Blob (by SHA-256), or GeneratorFailed

A generator is ``"file.py:function"``, the file inside the sweep file's folder (which callables
a sweep may name: :mod:`.callables`); it is called on the client with one parameter set as keyword arguments and returns
the model: an object with ``SerializeToString()`` (an ``onnx.ModelProto``), the bytes of an
ONNX / TFLite file, or the path of a file it wrote. The bytes go into the blob cache
(:mod:`.blobs`), so the workers need only mcudeploy, never the generator's code, and the
cell's configuration hash covers the model's content. A generator that raises for one
parameter set fails those cells only (recorded with the error); one that cannot be found
fails the sweep file (exit 2) before anything runs.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import UsageError
from .blobs import Blob, BlobCache, blob_of_file, plain_name
from .callables import load_function
from .spec import SweepSpec
from .spec_axes import GeneratorSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelSource:
    label: str
    path: Path | None = None                       # a model file
    generator: GeneratorSpec | None = None
    parameters: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        if self.path is not None:
            return {"file": str(self.path)}
        assert self.generator is not None  # a source is a model file or a generator
        return {"generator": self.generator.callable, "parameters": dict(self.parameters)}


class GeneratorFailed(Exception):
    """A generator raised (or returned no model) for one parameter set; the text says which."""


def resolve_callable(text: str, file: Path | None, where: str) -> Callable[..., Any]:
    """The function ``text`` names in ``file`` (checked by :func:`.callables.confined_callable`
    when the sweep file was read); the ``module:function`` form is refused here too."""
    if file is None:
        raise UsageError(f"{where} {text!r}: only \"file.py:function\" callables may run (see mcudeploy.sweep.callables)")
    if not file.is_file():
        raise UsageError(f"{where} {text!r}: no such file {file}")
    return load_function(text, file, where)


def _label(generator: GeneratorSpec, parameters: dict[str, Any]) -> str:
    return f"{generator.name}(" + ", ".join(f"{key}={value}" for key, value in parameters.items()) + ")"


def model_sources(spec: SweepSpec) -> list[ModelSource]:
    """Every value of the model axis, in file order then generator order."""
    names = [path.name for path in spec.models]
    sources = [ModelSource(path.name if names.count(path.name) == 1 else f"{path.parent.name}/{path.name}", path)
               for path in spec.models]
    for generator in spec.generators:
        sources += [ModelSource(_label(generator, parameters), generator=generator, parameters=parameters)
                    for parameters in generator.parameter_sets()]
    return sources


def file_name(label: str, suffix: str) -> str:
    """A plain file name for a generated model: ``unet(size=128)`` -> ``unet_size=128.onnx``."""
    return plain_name(label.replace("(", "_").replace(")", ""))[:150] + suffix


def _model_bytes(result: Any) -> tuple[bytes, str]:
    if hasattr(result, "SerializeToString"):
        return result.SerializeToString(), ".onnx"
    if isinstance(result, (bytes, bytearray)):
        data = bytes(result)
        return data, ".tflite" if data[4:8] == b"TFL3" else ".onnx"
    if isinstance(result, (str, Path)) and Path(result).is_file():
        return Path(result).read_bytes(), Path(result).suffix.lower()
    raise GeneratorFailed(f"returned {type(result).__name__}, not a model (an onnx.ModelProto, the bytes of a "
                          "model file, or the path of one)")


def materialise(source: ModelSource, cache: BlobCache) -> Blob:
    """The model of ``source`` as a blob (a generator is called here, on the client)."""
    if source.path is not None:
        return blob_of_file(source.path)
    generator = source.generator
    assert generator is not None  # a source is a model file or a generator
    function = resolve_callable(generator.callable, generator.file, f"generator {generator.callable}:")
    try:
        result = function(**source.parameters)
    except Exception as error:        # the user's code: any failure is this model's, not the sweep's
        raise GeneratorFailed(f"{source.label} raised {type(error).__name__}: {error}") from None
    try:
        data, suffix = _model_bytes(result)
    except GeneratorFailed as error:
        raise GeneratorFailed(f"{source.label} {error}") from None
    log.debug("generated %s: %d bytes", source.label, len(data))
    return cache.put(data, file_name(source.label, suffix))
