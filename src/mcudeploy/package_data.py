"""Data files shipped inside the package (the built-in targets, the estimator's tables).

    package_folder("mcudeploy.targets") / "builtin" / "stm32h743.toml"

The package's own folder when it is installed as plain files (every pip or editable install),
else :func:`importlib.resources.files` (a zipped package). Both give objects with ``/``,
``read_text``, ``is_file`` and ``iterdir``. importlib.resources is imported only in the
second case: it imports tempfile and zipfile, milliseconds of every command's start-up.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def package_folder(package: str) -> Any:
    """The folder of the (imported) package ``package``, as a path or a resources traversable."""
    folder = Path(sys.modules[package].__file__ or "").parent
    if folder.is_dir():
        return folder
    from importlib import resources
    return resources.files(package)
