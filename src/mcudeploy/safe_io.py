"""Output files of the command line: checked before any work, written so nothing is lost.

Every file a command writes (``--json``, ``--csv``, ``--png``, ``--plot``, ``--report``,
``-o``, ``--export-tflm``, ``--log`` and its sidecar) goes through this module - the one
output-path guard of the package:

* :func:`check_output_path` runs before the command does any work and refuses, with one
  :class:`~mcudeploy.errors.UsageError` line naming the option:
  a name holding a NUL character or longer than the file system allows
  (:func:`check_path_name`: a component over ``NAME_MAX`` bytes, the whole over ``PATH_MAX``);
  a path that is a folder, whose folder does not exist (or is not a folder);
  a device, FIFO or socket (``/dev/null``, ``/dev/full``: standard output is ``-`` where an
  option takes it, and nothing is ever created beside a device);
  a path that is the same file (``os.path.samefile``, so also through a symlink or a hard
  link) as any file the command reads - the run store included - since writing it would
  replace the input the command is reading;
  and (:class:`~mcudeploy.errors.UnsafePathError`) a symlink whose target is not in the
  link's own folder: writing through it would replace a file elsewhere.
* :func:`check_sidecar_path` is the same check for a file a command writes beside the one
  named (``search --log F`` also writes ``F.jsonl``; the ``--help`` says so): it is checked
  like the main output, and an existing sidecar is replaced only when it is one the command
  wrote (its ``belongs`` test), never a user file that happens to have the name.
* :func:`write_bytes` / :func:`write_text` write into a temporary file in the destination's
  folder and then ``os.replace`` it onto the destination, so a failure half-way (disk full,
  permission denied) leaves the previous file intact, removes the temporary file and is
  reported as one :class:`UsageError` line. A symlink to a file of the same folder is written
  through (its target is replaced, the link stays).

The ``-`` (standard output) convention is the caller's: these functions take real paths.
"""
from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Callable, Iterable

from .errors import UnsafePathError, UsageError

PathLike = str | os.PathLike
DEFAULT_NAME_MAX = 255       # bytes of one name, when the file system does not say
DEFAULT_PATH_MAX = 4096      # bytes of a whole path (Linux)


def _same_file(first: Path, second: Path) -> bool:
    try:
        return os.path.samefile(first, second)
    except (OSError, ValueError):
        return False


def _limit(folder: Path, name: str, default: int) -> int:
    """``os.pathconf`` of the nearest existing folder of ``folder``, else ``default``."""
    for candidate in (folder, *folder.parents):
        try:
            if candidate.is_dir():
                return int(os.pathconf(candidate, name))
        except (OSError, ValueError):
            continue
    return default


def check_path_name(path: PathLike, option: str) -> Path:
    """:class:`UsageError` for a name no file system takes: a NUL character, a component
    longer than ``NAME_MAX`` bytes or a path longer than ``PATH_MAX`` (module docstring)."""
    text = os.fspath(path)
    if "\x00" in text:
        raise UsageError(f"{option} {text!r}: the name holds a NUL character, which no file name can; "
                         "give another name")
    path = Path(text)
    folder = Path(os.path.abspath(path)).parent
    name_max = _limit(folder, "PC_NAME_MAX", DEFAULT_NAME_MAX)
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > name_max:
            raise UsageError(f"{option} {text[:60]}...: the name {part[:40]}... is too long ({size} bytes; "
                             f"the file system takes at most {name_max}); give a shorter name")
    size = len(os.fsencode(os.path.abspath(text)))
    path_max = _limit(folder, "PC_PATH_MAX", DEFAULT_PATH_MAX)
    if size >= path_max:
        raise UsageError(f"{option} {text[:60]}...: the path is too long ({size} bytes; the file system "
                         f"takes at most {path_max - 1}); give a shorter path")
    return path


def _kind(path: Path) -> str | None:
    """``"folder"``, ``"file"``, ``"special"`` (device, FIFO, socket) or None (nothing there)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISDIR(mode):
        return "folder"
    return "file" if stat.S_ISREG(mode) else "special"


def _refuse_link_out(path: Path, where: str) -> None:
    """:class:`UnsafePathError` when ``path`` is a symlink to anything outside its folder."""
    if not path.is_symlink():
        return
    try:
        os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise UsageError(f"{where}: is a symbolic link that leads back to itself (a loop); remove the link "
                             "or choose another output name") from None
    target = Path(os.path.realpath(path))
    if target.parent != Path(os.path.realpath(path.parent)):
        raise UnsafePathError(f"{where}: is a symbolic link to {target}, outside its folder; writing it would "
                              "replace that file. Remove the link or choose another output name")


def check_output_path(path: PathLike, option: str, *, inputs: Iterable[PathLike | None] = ()) -> Path:
    """``path`` as a :class:`Path` if a command may write it; :class:`UsageError` otherwise
    (see the module docstring). ``inputs`` are the files the command reads (``None`` skipped)."""
    path = check_path_name(path, option)
    where = f"{option} {path}"
    if str(path) == "" or path.name in ("", ".", ".."):
        raise UsageError(f"{where}: give a file name, not a folder")
    kind = _kind(path)
    if kind == "folder":
        raise UsageError(f"{where}: is a folder; give a file name (e.g. {path / 'out'})")
    if kind == "special":
        raise UsageError(f"{where}: is a device or a pipe, not a regular file; give a file name "
                         "('-' means standard output where the option takes it)")
    parent = path.parent
    if _kind(parent) is None:
        raise UsageError(f"{where}: folder {parent} does not exist; create it first")
    if _kind(parent) != "folder":
        raise UsageError(f"{where}: {parent} is not a folder")
    _refuse_link_out(path, where)
    for source in inputs:
        if source is not None and kind is not None and _same_file(path, Path(source)):
            raise UsageError(f"{where}: this is the file {source} the command reads; writing it "
                             "would replace it. Choose another output name")
    return path


def check_sidecar_path(path: PathLike, option: str, *, belongs: Callable[[Path], bool],
                       inputs: Iterable[PathLike | None] = ()) -> Path:
    """:func:`check_output_path` of a sidecar file (module docstring); an existing one is
    refused unless ``belongs(path)`` says the command wrote it."""
    path = check_output_path(path, option, inputs=inputs)
    if _kind(path) == "file" and not belongs(path):
        raise UsageError(f"{option}: {path} exists and was not written by this command; it is not "
                         "overwritten. Move it away or choose another name")
    return path


def default_file_mode() -> int:
    """The permission bits ``open()`` gives a new file: ``0o666 & ~umask``."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _new_file_mode(path: Path) -> int:
    """Permission bits for the written file: the replaced file's, else :func:`default_file_mode`."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return default_file_mode()


def write_bytes(path: PathLike, data: bytes, option: str = "-o") -> Path:
    """Write ``data`` to ``path`` atomically (temporary file + ``os.replace``); any
    ``OSError`` becomes one :class:`UsageError` and leaves the old file as it was."""
    path = check_output_path(path, option)
    destination = Path(os.path.realpath(path))   # write through a symlink, keep the link
    try:
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
