"""Output files of the command line: checked before any work, written so nothing is lost.

Every file a command writes (``--json``, ``--csv``, ``--png``, ``--plot``, ``--report``,
``-o``, ``--export-tflm``) goes through this module:

* :func:`check_output_path` runs before the command does any work and refuses, with a
  :class:`~mcudeploy.errors.UsageError` naming the option, a path that is a folder, whose
  folder does not exist (or is not a folder), or that is the same file (``os.path.samefile``,
  so also through a symlink or a hard link) as any file the command reads: writing it would
  replace the input the command is reading.
* :func:`write_bytes` / :func:`write_text` write into a temporary file in the destination's
  folder and then ``os.replace`` it onto the destination, so a failure half-way (disk full,
  permission denied) leaves the previous file intact, removes the temporary file and is
  reported as one :class:`UsageError` line. A symlink is written through (its target is
  replaced, the link stays); a special file (``/dev/null``, a FIFO) is written in place.

The ``-`` (standard output) convention is the caller's: these functions take real paths.
"""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Iterable

from .errors import UsageError

PathLike = str | os.PathLike


def _same_file(first: Path, second: Path) -> bool:
    try:
        return os.path.samefile(first, second)
    except (OSError, ValueError):
        return False


def check_output_path(path: PathLike, option: str, *, inputs: Iterable[PathLike | None] = ()) -> Path:
    """``path`` as a :class:`Path` if a command may write it; :class:`UsageError` otherwise
    (see the module docstring). ``inputs`` are the files the command reads (``None`` skipped)."""
    path = Path(path)
    where = f"{option} {path}"
    if str(path) == "" or path.name in ("", ".", ".."):
        raise UsageError(f"{where}: give a file name, not a folder")
    if path.is_dir():
        raise UsageError(f"{where}: is a folder; give a file name (e.g. {path / 'out'})")
    parent = path.parent
    if not parent.exists():
        raise UsageError(f"{where}: folder {parent} does not exist; create it first")
    if not parent.is_dir():
        raise UsageError(f"{where}: {parent} is not a folder")
    for source in inputs:
        if source is not None and path.exists() and _same_file(path, Path(source)):
            raise UsageError(f"{where}: this is the file {source} the command reads; writing it "
                             "would replace it. Choose another output name")
    return path


def _is_special(path: Path) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _new_file_mode(path: Path) -> int:
    """Permission bits for the written file: the replaced file's, else ``0o666 & ~umask``."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_bytes(path: PathLike, data: bytes, option: str = "-o") -> Path:
    """Write ``data`` to ``path`` atomically (temporary file + ``os.replace``); any
    ``OSError`` becomes one :class:`UsageError` and leaves the old file as it was."""
    path = check_output_path(path, option)
    destination = Path(os.path.realpath(path))   # write through a symlink, keep the link
    try:
        if _is_special(destination):
            with open(destination, "wb") as stream:
                stream.write(data)
            return path
        descriptor, temporary = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".tmp",
                                                 dir=destination.parent)
    except OSError as err:
        raise UsageError(f"{option} {path}: cannot write it ({err.strerror or err})") from None
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, _new_file_mode(destination))
        os.replace(temporary, destination)
    except OSError as err:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise UsageError(f"{option} {path}: cannot write it ({err.strerror or err}); the "
                         "previous file, if any, is unchanged") from None
    return path


def write_text(path: PathLike, text: str, option: str = "-o") -> Path:
    """:func:`write_bytes` of ``text`` as UTF-8 (unencodable characters, such as lone
    surrogates from a damaged model name, become ``\\ud800``-style escapes)."""
    return write_bytes(path, text.encode("utf-8", errors="backslashreplace"), option)
