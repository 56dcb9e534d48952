"""Files addressed by content: how models, data, target files and plugins travel to the workers.

    blob = blob_of_file(Path("model.tflite"))         # client: Blob(sha256, name, path, size)
    cache = BlobCache(folder); path = cache.ensure(sha256, "model.tflite", data)   # a worker

The client knows every file by its SHA-256; the executor scatters each file's bytes to the
cluster once, keyed ``mcudeploy-blob-<sha256>`` (:func:`blob_key`), and a worker writes the
bytes into its cache folder as ``<sha256[:2]>/<sha256>/<name>`` the first time a cell needs
them (the file keeps its name: messages and generated code name the model, not a hash) (written to a temporary file, checked against the hash, then renamed: threads and
processes of one machine share the folder safely). A file already there is not written
again, so a persistent cluster fetches a model once however many sweeps use it.

The cache folder: ``$MCUDEPLOY_SWEEP_CACHE``, else ``<temp>/mcudeploy-sweep-<user id>``.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

CACHE_ENV = "MCUDEPLOY_SWEEP_CACHE"
CHUNK = 1 << 20
SAFE_NAME = re.compile(r"[A-Za-z0-9._=,+-]{1,200}")


@dataclass(frozen=True)
class Blob:
    sha256: str
    name: str           # the file's name (a generated model: the generator's label)
    path: Path          # where the client reads it
    size: int


def plain_name(text: str) -> str:
    """``text`` as a plain file name (characters outside :data:`SAFE_NAME` become ``_``)."""
    name = re.sub(r"[^A-Za-z0-9._=,+-]+", "_", text).strip("_")
    return name[-200:] if name not in ("", ".", "..") else "file"


def blob_key(sha256: str) -> str:
    """The cluster-wide key of a blob's bytes."""
    return f"mcudeploy-blob-{sha256}"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def blob_of_file(path: Path) -> Blob:
    try:
        return Blob(sha256_of(path), plain_name(path.name), path, path.stat().st_size)
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error}") from None


def default_cache_folder() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    user = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"mcudeploy-sweep-{user}"


class BlobCache:
    """A content-addressed folder (module docstring)."""

    def __init__(self, folder: Path | None = None):
        self.folder = Path(folder) if folder is not None else default_cache_folder()

    def path_for(self, sha256: str, name: str) -> Path:
        if not SAFE_NAME.fullmatch(name) or name in (".", ".."):
            raise UsageError(f"blob {sha256[:12]}: {name!r} is not a plain file name")
        return self.folder / sha256[:2] / sha256 / name

    def put(self, data: bytes, name: str) -> Blob:
        """Store ``data`` (the client's generated models); its :class:`Blob`."""
        sha256 = hashlib.sha256(data).hexdigest()
        return Blob(sha256, name, self.ensure(sha256, name, data), len(data))

    def ensure(self, sha256: str, name: str, data: bytes) -> Path:
        """The cached file of ``sha256``, written from ``data`` if it is not there yet."""
        path = self.path_for(sha256, name)
        if path.is_file() and path.stat().st_size == len(data):
            return path
        if hashlib.sha256(data).hexdigest() != sha256:
            raise UsageError(f"blob {sha256[:12]}: the bytes received do not have this SHA-256 (damaged in transfer)")
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".part-")
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return path
