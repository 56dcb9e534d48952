"""Writing a generated project into a folder, deterministically and without losing user files.

Input: the files (relative path -> text) and the output folder. Rules:

* a file is *ours* only when the folder's manifest (:data:`MANIFEST`: JSON, each file
  mcudeploy wrote with the SHA-256 of the bytes it wrote) lists it **and** the file on disk
  still has that hash. Nothing read from the manifest is trusted beyond that: an entry that
  is absolute, contains ``..``, names the manifest, leaves the folder after resolving, or
  whose hash does not match (the user edited the file, or the manifest was planted) is never
  removed nor replaced; manifests of the first format (a plain list, no hashes) prove nothing;
* a folder holding any file that is not ours (outside ``build/``, where the generated
  Makefile builds) is refused with :class:`~mcudeploy.errors.UsageError` unless ``force``;
* with ``force`` the other files stay untouched: user files are never deleted; a user file
  in the way of a generated one is first renamed to ``<name>.user`` (``.user.2``, ...);
* a symlink inside the folder on the way to a file mcudeploy would write or remove (a
  linked sub-folder, a linked file) is refused with :class:`~mcudeploy.errors.UnsafePathError`
  naming the link: writing through it would change files outside the folder;
* files of the previous generation that the new one does not produce are removed (they are
  ours, by hash); every file is written to a temporary file and renamed over the old one,
  and the manifest records what is on disk even when writing stops half-way (disk full),
  so the next run still knows its own files. Bytes only depend on the inputs, so generating
  twice gives identical files.

The same discipline serves a command that writes a few named files, one at a time, into a
folder that also holds the user's files (``mcudeploy deploy`` into its ``[project] output``,
which may be the project folder itself): :func:`check_own_files` runs before any work and
refuses, for each name the command will write, a symlink on the way
(:class:`~mcudeploy.errors.UnsafePathError`) and an existing file that is not ours
(:class:`~mcudeploy.errors.UsageError`, listing them); :func:`write_own_file` writes one
file by the same rules and records it in the folder's manifest (a manifest of its own name,
``manifest=``, so that it never mixes with a generated project's). Files the command does not
name are never looked at.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from ..errors import UnsafePathError, UsageError
from ..safe_io import check_path_name
from ..text_inputs import parse_json, read_text

MANIFEST = ".mcudeploy-manifest.json"
MANIFEST_FORMAT = 2
BUILD_FOLDER = "build"
FOREIGN_SHOWN = 5
_UMASK = os.umask(0)
os.umask(_UMASK)
_FILE_MODE = 0o666 & ~_UMASK   # what open() would give a new file
log = logging.getLogger(__name__)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _plain_relative(relative: object, manifest: str = MANIFEST) -> bool:
    """Whether a manifest / generated entry is a plain relative POSIX path inside the folder."""
    if not isinstance(relative, str) or not relative or "\\" in relative or "\x00" in relative:
        return False
    parts = PurePosixPath(relative).parts
    return (not relative.startswith("/") and ".." not in parts and "." not in parts
            and relative != manifest and not (len(relative) > 1 and relative[1] == ":"))


def _first_link(folder: Path, relative: str) -> Path | None:
    """The first component of ``folder / relative`` that is a symlink, if any."""
    current = folder
    for part in PurePosixPath(relative).parts:
        current = current / part
        if current.is_symlink():
            return current
    return None


def _refuse_links(folder: Path, relative: str, option: str = "-o") -> None:
    """:class:`UnsafePathError` when any component of ``folder / relative`` is a symlink."""
    link = _first_link(folder, relative)
    if link is not None:
        raise UnsafePathError(
            f"{option} {folder}: {link} is a symbolic link (to {os.readlink(link)}); mcudeploy would "
            f"write {relative} through it, outside the output folder. Remove the link or "
            "choose another output folder")


def _file_hash(path: Path) -> str | None:
    try:
        return _digest(path.read_bytes()) if path.is_file() and not path.is_symlink() else None
    except OSError:
        return None


def _read_manifest(folder: Path, manifest: str = MANIFEST, option: str = "-o") -> dict[str, str]:
    """``{relative path: sha256}`` of the manifest's entries, as written (unverified)."""
    path = folder / manifest
    if path.is_symlink():
        raise UnsafePathError(f"{option} {folder}: {path} is a symbolic link; remove it or choose "
                              "another output folder")
    if not path.exists():
        return {}
    text = read_text(path, "manifest")      # a FIFO or a huge file: one error line
    try:
        files = parse_json(text, str(path))["files"]    # nesting bounded
    except (UsageError, KeyError, TypeError):
        raise UsageError(f"{path} is not an mcudeploy manifest; remove it or choose another "
                         "output folder") from None
    if isinstance(files, list):   # format 1: names without hashes prove nothing
        return {}
    if not isinstance(files, dict):
        raise UsageError(f"{path} is not an mcudeploy manifest; remove it or choose another "
                         "output folder")
    return {name: digest for name, digest in files.items() if isinstance(digest, str)}


def our_files(folder: Path, manifest: str = MANIFEST, option: str = "-o") -> dict[str, str]:
    """The manifest's entries that are provably ours (see the module docstring)."""
    ours = {}
    resolved = folder.resolve()
    for relative, digest in _read_manifest(folder, manifest, option).items():
        if not _plain_relative(relative, manifest):
            continue
        path = folder / relative
        try:
            inside = path.resolve().is_relative_to(resolved)
        except (OSError, RuntimeError):
            inside = False
        if inside and _first_link(folder, relative) is None and _file_hash(path) == digest:
            ours[relative] = digest
    return ours


def foreign_files(folder: Path, ours: dict[str, str] | None = None,
                  limit: int | None = None) -> list[str]:
    """Files (and links) in ``folder`` that mcudeploy did not write (relative, in sorted
    walk order; at most ``limit``). Symlinks are listed, never followed."""
    ours = our_files(folder) if ours is None else ours
    found: list[str] = []
    for root, folders, names in os.walk(folder, followlinks=False):
        base = Path(root)
        for name in sorted(folders):   # a linked folder is an entry of its own
            if (base / name).is_symlink():
                names.append(name)
        folders[:] = sorted(f for f in folders if not (base / f).is_symlink()
                            and not (base == folder and f == BUILD_FOLDER))
        for name in sorted(names):
            relative = (base / name).relative_to(folder).as_posix()
            if relative != MANIFEST and relative not in ours:
                found.append(relative)
                if limit is not None and len(found) >= limit:
                    return found
    return found


def _keep_user_file(path: Path) -> None:
    backup, counter = path.with_name(path.name + ".user"), 1
    while backup.exists() or backup.is_symlink():
        counter += 1
        backup = path.with_name(f"{path.name}.user.{counter}")
    path.rename(backup)
    log.warning("kept your %s as %s (--force)", path, backup.name)


def _clear_the_way(folder: Path, relative: str, ours: dict[str, str]) -> None:
    """Make ``folder / relative`` writable: a non-folder where a folder is needed, or a
    foreign file at the path itself, is kept as ``.user`` (only reached with ``force``)."""
    parts = PurePosixPath(relative).parts
    for index in range(len(parts)):
        prefix = "/".join(parts[:index + 1])
        path = folder / prefix
        last = index == len(parts) - 1
        if not path.exists():
            return
        if path.is_dir():
            if last:
                raise UsageError(f"-o {folder}: {prefix} is a folder where mcudeploy writes a "
                                 "file; move it or choose another output folder")
            continue
        if prefix in ours:   # ours: replaced (the file itself) or removed (in the way)
            if not last:
                path.unlink()
            return
        _keep_user_file(path)
        return


def _write_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, _FILE_MODE)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _write_manifest(folder: Path, files: dict[str, str], manifest: str = MANIFEST) -> None:
    text = json.dumps({"generator": "mcudeploy", "format": MANIFEST_FORMAT,
                       "files": dict(sorted(files.items()))}, indent=1) + "\n"
    _write_file(folder / manifest, text.encode("utf-8"))


def _check_folder(folder: Path, files: Mapping[str, str | bytes]) -> None:
    check_path_name(folder, "-o")     # a NUL or an over-long name: one line, not an OSError
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"-o {folder}: exists and is not a folder; choose a folder")
    for relative in files:
        if not _plain_relative(relative):
            raise ValueError(f"generated file name {relative!r} is not a plain relative path")
    if folder.is_dir():
        _read_manifest(folder)   # a linked manifest is refused before anything else


def _refuse_foreign(folder: Path, ours: dict[str, str]) -> None:
    foreign = foreign_files(folder, ours, limit=FOREIGN_SHOWN + 1)
    if foreign:
        shown = ", ".join(foreign[:FOREIGN_SHOWN]) + (" and more" if len(foreign) > FOREIGN_SHOWN else "")
        raise UsageError(f"-o {folder}: the folder holds files mcudeploy did not write ({shown}); "
                         "choose an empty or new folder, or pass --force to write beside them "
                         "(they are kept)")


def check_output_folder(folder: Path, *, force: bool = False) -> None:
    """The checks :func:`write_project` makes that do not need the files: run them before
    any work so that a refused folder costs nothing."""
    folder = Path(folder)
    _check_folder(folder, {})
    if folder.is_dir() and not force:
        _refuse_foreign(folder, our_files(folder))


def write_project(files: Mapping[str, str | bytes], folder: Path, *, force: bool = False) -> list[Path]:
    """Write ``files`` under ``folder`` by the rules above; the paths written, sorted."""
    folder = Path(folder)
    _check_folder(folder, files)
    ours = our_files(folder) if folder.is_dir() else {}
    stale = sorted(set(ours) - set(files))
    for relative in sorted(files) + stale:
        _refuse_links(folder, relative)
    if folder.is_dir() and not force:
        _refuse_foreign(folder, ours)
    record = dict(ours)   # what the manifest says, kept true while writing
    written = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for relative in stale:
            (folder / relative).unlink()
            del record[relative]
        for relative in sorted(files):
            content = files[relative]
            data = content if isinstance(content, bytes) else content.encode("utf-8")
            _clear_the_way(folder, relative, ours)
            record.pop(relative, None)
            _write_file(folder / relative, data)
            record[relative] = _digest(data)
            written.append(folder / relative)
    except OSError as err:
        raise UsageError(f"-o {folder}: cannot write the project ({err.strerror or err}); "
                         f"{len(written)} of {len(files)} files written, none of yours removed") from None
    finally:
        try:
            _write_manifest(folder, record)
        except OSError:
            log.warning("could not update %s", folder / MANIFEST)
    log.info("wrote %d files to %s", len(written), folder)
    return written


def _not_ours(folder: Path, names: list[str], option: str) -> UsageError:
    shown = ", ".join(names[:FOREIGN_SHOWN]) + (" and more" if len(names) > FOREIGN_SHOWN else "")
    return UsageError(f"{option} {folder}: {shown} exist(s) and mcudeploy did not write them (or they changed "
                      "since); they are not overwritten. Move them away or choose another output folder")


def check_own_files(folder: Path, relatives: list[str], *, manifest: str, option: str) -> None:
    """Before any work: each of ``relatives`` (files, or folders of a generated project)
    under ``folder`` is absent or ours, with no symlink on the way (module docstring)."""
    folder = Path(folder)
    check_path_name(folder, option)
    for relative in relatives:
        check_path_name(folder / relative, option)
    if not folder.exists():
        return
    if not folder.is_dir():
        raise UsageError(f"{option} {folder}: exists and is not a folder; choose a folder")
    ours = our_files(folder, manifest, option)
    for relative in relatives:
        _refuse_links(folder, relative, option)
    foreign = [relative for relative in relatives
               if (folder / relative).is_file() and relative not in ours]
    if foreign:
        raise _not_ours(folder, foreign, option)


def write_own_file(folder: Path, relative: str, data: bytes, *, manifest: str, option: str) -> Path:
    """Write ``data`` to ``folder / relative`` when that is absent or ours, and record it in
    the manifest (module docstring); the path written."""
    folder = Path(folder)
    if not _plain_relative(relative, manifest):
        raise ValueError(f"file name {relative!r} is not a plain relative path")
    _refuse_links(folder, relative, option)
    path = folder / relative
    entries = _read_manifest(folder, manifest, option) if folder.is_dir() else {}
    # only this file is verified (the others are, by our_files, whenever they are used)
    digest = _file_hash(path)
    if (path.exists() or path.is_symlink()) and (digest is None or entries.get(relative) != digest):
        raise _not_ours(folder, [relative], option)
    entries = {name: digest for name, digest in entries.items() if _plain_relative(name, manifest)}
    try:
        _write_file(path, data)
        entries[relative] = _digest(data)
        _write_manifest(folder, entries, manifest)
    except OSError as err:
        raise UsageError(f"{option} {folder}: cannot write {relative} ({err.strerror or err}); the previous "
                         "file, if any, is unchanged") from None
    return path
