"""The one bounded reader of every text, TOML and JSON file mcudeploy reads.

    read_text(path, "--config")          -> str     (UTF-8)
    read_toml(path, "--overlay")         -> dict    (parsed, nesting checked)
    read_json(path, "deploy state")      -> Any
    read_tail(path, "log file", limit)   -> (bytes, size)   the last ``limit`` bytes
    read_stream(stream, "standard input", limit) -> bytes

A configuration, a target, a memory-pool file, an estimator overlay, a search space, a
sweep file, a project file, ``deploy.json`` and a log are small text files. What a user may
name instead is refused with one :class:`~mcudeploy.errors.UsageError` line naming the
option and the file, before anything is read:

* **regular files only**: the file is opened with ``O_NONBLOCK`` (so a FIFO with no writer
  cannot block the open) and ``fstat`` decides: a FIFO, a device (``/dev/zero``,
  ``/dev/null``), a socket or a folder is refused. A ``/proc`` file the kernel calls regular
  but cannot read (``/proc/self/mem``) is one error line too;
* **a size limit**: :data:`MAX_TEXT_BYTES` (16 MiB; the largest real input, a memory-pool
  file of a big SoC, is a few hundred KiB). At most limit + 1 bytes are ever read, so a file
  that grows while it is read, or a ``/proc`` file that reports size 0, stays bounded;
* **a nesting limit** for TOML / JSON: :data:`MAX_NESTING` (64) levels of arrays and tables.
  A deeper document (``[[[[...`` or ``a.b.c.d...``) is refused; a ``RecursionError`` of the
  parser never escapes, and every later walk of the document (hashing, JSON dumps of the run
  store) stays far from Python's recursion limit;
* **UTF-8**: an undecodable byte is an error naming its offset.
"""
from __future__ import annotations

import errno
import json
import os
import stat
import tomllib
from typing import IO, Any

from .errors import McuDeployError, UsageError

MAX_TEXT_BYTES = 16 << 20
MAX_NESTING = 64
PathLike = str | os.PathLike
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _where(path: PathLike, what: str) -> str:
    return f"{what} {os.fsdecode(path)}" if what else os.fsdecode(path)


def _open_regular(path: PathLike, what: str, error: type[McuDeployError], missing: str) -> int:
    """A descriptor of the regular file ``path`` (module docstring), or ``error``."""
    where = _where(path, what)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise error(f"{where}: no such file{missing}") from None
    except (ValueError, TypeError):          # an embedded NUL
        raise error(f"{where!r}: the path holds a NUL character; give a real file name") from None
    except OSError as err:
        if err.errno == errno.EISDIR:
            raise error(f"{where}: is a folder; give a file") from None
        raise error(f"{where}: cannot read it ({err.strerror or err})") from None
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        raise error(f"{where}: is {_kind(mode)}, not a regular file; give a file")
    return descriptor


def _read_at_most(descriptor: int, limit: int, where: str, error: type[McuDeployError]) -> bytes:
    chunks: list[bytes] = []
    total = 0
    try:
        while total <= limit:
            chunk = os.read(descriptor, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as err:
        raise error(f"{where}: cannot read it ({err.strerror or err})") from None
    finally:
        os.close(descriptor)
    return b"".join(chunks)


def read_bytes(path: PathLike, what: str, *, limit: int = MAX_TEXT_BYTES,
               error: type[McuDeployError] = UsageError, missing: str = "") -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` (module docstring).
    ``what`` names the option or role (``"--config"``), ``missing`` is added to "no such file"."""
    where = _where(path, what)
    descriptor = _open_regular(path, what, error, missing)
    size = os.fstat(descriptor).st_size
    if size > limit:
        os.close(descriptor)
        raise error(f"{where}: {size:,} bytes, more than the {limit:,} bytes this input may have; "
                    "is this the right file?")
    data = _read_at_most(descriptor, limit, where, error)
    if len(data) > limit:
        raise error(f"{where}: more than the {limit:,} bytes this input may have; is this the right file?")
    return data


def check_readable(path: PathLike, what: str, *, error: type[McuDeployError] = UsageError) -> None:
    """``error`` unless ``path`` is a regular file whose first byte can be read (a FIFO, a
    device, ``/proc/self/mem``: refused), without reading the rest (a model may be large)."""
    descriptor = _open_regular(path, what, error, "")
    _read_at_most(descriptor, 0, _where(path, what), error)


def decode(data: bytes, where: str, error: type[McuDeployError] = UsageError) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise error(f"{where}: not UTF-8 text (byte {err.start}); save it as UTF-8") from None


def read_text(path: PathLike, what: str, *, limit: int = MAX_TEXT_BYTES,
              error: type[McuDeployError] = UsageError, missing: str = "") -> str:
    """The UTF-8 text of the regular file ``path`` (module docstring)."""
    return decode(read_bytes(path, what, limit=limit, error=error, missing=missing), _where(path, what), error)


def nesting_depth(document: Any, stop: int = MAX_NESTING + 1) -> int:
    """Levels of lists / dicts in ``document`` (walked without recursion), at most ``stop``."""
    deepest, pending = 0, [(document, 0)]
    while pending:
        value, depth = pending.pop()
        if not isinstance(value, (dict, list, tuple)):
            continue
        children = list(value.values()) if isinstance(value, dict) else list(value)
        depth += 1
        if depth >= stop:
            return depth
        deepest = max(deepest, depth)
        pending.extend((child, depth) for child in children)
    return deepest


def _check_nesting(document: Any, where: str, error: type[McuDeployError]) -> None:
    if nesting_depth(document) > MAX_NESTING:
        raise error(f"{where}: arrays or tables nested more than {MAX_NESTING} levels deep; this is not "
                    "an mcudeploy input")


def parse_toml(text: str, where: str, error: type[McuDeployError] = UsageError) -> dict[str, Any]:
    """``text`` parsed as TOML, nesting checked; ``where`` names it in the error."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise error(f"{where}: not valid TOML ({err})") from None
    except RecursionError:
        raise error(f"{where}: arrays or tables nested too deeply; this is not an mcudeploy input") from None
    except ValueError as err:                   # an integer of more than 4300 digits
        raise error(f"{where}: not valid TOML ({err})") from None
    _check_nesting(document, where, error)
    return document


def parse_json(text: str | bytes, where: str, error: type[McuDeployError] = UsageError) -> Any:
    """``text`` parsed as JSON, nesting checked; ``where`` names it in the error."""
    try:
        document = json.loads(text)
    except RecursionError:
        raise error(f"{where}: arrays or objects nested too deeply; this is not an mcudeploy input") from None
    except (ValueError, UnicodeDecodeError) as err:    # JSONDecodeError, 4300+ digit integers
        raise error(f"{where}: not valid JSON ({err})") from None
    _check_nesting(document, where, error)
    return document


def read_toml(path: PathLike, what: str, *, error: type[McuDeployError] = UsageError,
              missing: str = "") -> dict[str, Any]:
    """The TOML document of the regular file ``path`` (module docstring)."""
    return parse_toml(read_text(path, what, error=error, missing=missing), _where(path, what), error)


def read_json(path: PathLike, what: str, *, error: type[McuDeployError] = UsageError,
              missing: str = "") -> Any:
    """The JSON document of the regular file ``path`` (module docstring)."""
    return parse_json(read_text(path, what, error=error, missing=missing), _where(path, what), error)


def read_tail(path: PathLike, what: str, limit: int,
              error: type[McuDeployError] = UsageError) -> tuple[bytes, int]:
    """The last ``limit`` bytes of the regular file ``path`` and its size (a log: its end
    says what failed)."""
    where = _where(path, what)
    descriptor = _open_regular(path, what, error, "")
    size = os.fstat(descriptor).st_size
    try:
        os.lseek(descriptor, max(0, size - limit), os.SEEK_SET)
    except OSError as err:
        os.close(descriptor)
        raise error(f"{where}: cannot read it ({err.strerror or err})") from None
    data = _read_at_most(descriptor, limit - 1, where, error)   # at most limit bytes
    return data, size


def read_stream(stream: IO[bytes], what: str, limit: int, error: type[McuDeployError] = UsageError) -> bytes:
    """At most ``limit`` bytes of ``stream`` (standard input); more is refused, so an endless
    stream (``< /dev/zero``) ends in one error line, not in ``MemoryError``."""
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = stream.read(min(1 << 20, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
    raise error(f"{what}: more than {limit:,} bytes; save it to a file and give the file instead")
