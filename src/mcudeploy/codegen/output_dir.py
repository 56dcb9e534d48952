"""Writing a generated project into a folder, deterministically and without losing user files.

Input: the files (relative path -> text) and the output folder. Rules:

* the folder's manifest (:data:`MANIFEST`, a sorted JSON list of the files mcudeploy wrote)
  says which files are ours; a folder holding any other file (outside ``build/``, where the
  generated Makefile builds) is refused with :class:`~mcudeploy.errors.UsageError` unless
  ``force`` is given;
* with ``force`` the other files stay untouched: user files are never deleted; a user file
  in the way of a generated one is first renamed to ``<name>.user`` (``.user.2``, ...);
* files of the previous generation that the new one does not produce are removed (they
  were ours), everything else is (over)written; bytes only depend on the inputs, so
  generating twice gives identical files.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

from ..errors import UsageError

MANIFEST = ".mcudeploy-manifest.json"
BUILD_FOLDER = "build"
log = logging.getLogger(__name__)


def _previous(folder: Path) -> set[str]:
    path = folder / MANIFEST
    if not path.exists():
        return set()
    try:
        return set(json.loads(path.read_text())["files"])
    except (ValueError, KeyError, TypeError):
        raise UsageError(f"{path} is not an mcudeploy manifest; remove it or choose another "
                         "output folder") from None


def foreign_files(folder: Path) -> list[str]:
    """Files in ``folder`` that mcudeploy did not write (sorted, relative)."""
    ours = _previous(folder) | {MANIFEST}
    found = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if path.is_file() and relative not in ours and relative.split("/")[0] != BUILD_FOLDER:
            found.append(relative)
    return found


def _keep_user_file(path: Path) -> None:
    backup, counter = path.with_name(path.name + ".user"), 1
    while backup.exists():
        counter += 1
        backup = path.with_name(f"{path.name}.user.{counter}")
    path.rename(backup)
    log.warning("kept your %s as %s (--force)", path, backup.name)


def write_project(files: dict[str, str], folder: Path, *, force: bool = False) -> list[Path]:
    """Write ``files`` under ``folder`` by the rules above; the paths written, sorted."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"-o {folder}: exists and is not a folder; choose a folder")
    foreign: list[str] = []
    if folder.exists():
        foreign = foreign_files(folder)
        if foreign and not force:
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            raise UsageError(f"-o {folder}: the folder holds files mcudeploy did not write ({shown}); "
                             "choose an empty or new folder, or pass --force to write beside them "
                             "(they are kept)")
        for stale in sorted(_previous(folder) - set(files)):
            if (folder / stale).is_file():
                (folder / stale).unlink()
    written = []
    for relative in sorted(files):
        if relative.startswith("/") or ".." in Path(relative).parts or relative == MANIFEST:
            raise ValueError(f"generated file name {relative!r} is not a plain relative path")
        path = folder / relative
        if relative in foreign:
            _keep_user_file(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[relative].encode("utf-8"))
        written.append(path)
    (folder / MANIFEST).write_text(json.dumps({"generator": "mcudeploy", "files": sorted(files)}, indent=1) + "\n")
    log.info("wrote %d files to %s", len(written), folder)
    return written
