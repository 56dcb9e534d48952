"""Which Python functions a sweep file may name, checked without running them.

    file = confined_callable("make_model.py:make", folder, where)   # checked, nothing executed
    function = load_function("make_model.py:make", file, where)     # executes the file (a run)

A sweep file is code: its ``[[generators]]`` callables and its plugin stages run with the
user's rights. So that the code a sweep runs is always code the user can see next to the
sweep file, a callable is ``"file.py:function"`` where

* ``file.py`` (relative to the sweep file's folder, or absolute) is, after following
  symbolic links, a regular file **inside the sweep file's folder** (or one of its
  sub-folders), like the sweep's model paths; or one of mcudeploy's own generators,
  :data:`SHIPPED_GENERATORS` (``tools/make_unet.py:make_unet`` of the mcudeploy checkout);
* ``function`` is defined at the top level of that file (a ``def``, a ``class``, an
  assignment or an import), which is checked by parsing the file, not by running it.

The ``"module:function"`` form is refused: it would let a sweep file call any installed
function with arguments of its choosing (``shutil:rmtree`` with ``path = ["precious"]``,
``os:system``). To use a function of an installed package, import it in a small ``.py``
file next to the sweep file. Nothing is imported or executed when a sweep file is loaded or
listed (``mcudeploy sweep --list``); :func:`load_function` runs the file when the sweep runs.
"""
from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
from pathlib import Path
from typing import Any, Callable

from ..errors import UsageError
from ..text_inputs import read_text
from .toml_reader import expand_path

TOOLS = Path(__file__).resolve().parents[3] / "tools"      # the mcudeploy checkout's tools/
SHIPPED_GENERATORS = {TOOLS / "make_unet.py": ("make_unet",)}
_loaded_files: dict[Path, Any] = {}


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
    except ValueError:
        return False
    return True


def _top_level_names(path: Path, where: str) -> set[str]:
    try:
        tree = ast.parse(read_text(path, where.rstrip(":")), filename=str(path))
    except SyntaxError as error:
        raise UsageError(f"{where} {path}: not valid Python (line {error.lineno}: {error.msg})") from None
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(target.id for target in targets if isinstance(target, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).partition(".")[0] for alias in node.names)
    return names


def confined_callable(text: str, folder: Path, where: str) -> Path:
    """The resolved ``.py`` file of the callable ``text`` (module docstring), checked."""
    module, _, function = text.rpartition(":")
    if not module or not function.isidentifier():
        raise UsageError(f"{where} {text!r}: give a function in a .py file as \"file.py:function\"")
    if not module.endswith(".py"):
        raise UsageError(f"{where} {text!r}: only \"file.py:function\" with the file in the sweep file's folder "
                         f"{folder} may be named (a sweep file is code: a module such as {module} could be any "
                         "installed function); import what you need in a .py file next to the sweep file")
    file = Path(os.path.realpath(expand_path(module, folder, where)))
    shipped = SHIPPED_GENERATORS.get(file)
    if shipped is None and not _inside(file, Path(os.path.realpath(folder))):
        raise UsageError(f"{where} {text!r}: {file} is outside the sweep file's folder {folder}; a sweep may run "
                         "only code next to it (copy the file there)")
    if shipped is not None and function not in shipped:
        raise UsageError(f"{where} {text!r}: mcudeploy's {file.name} offers {', '.join(shipped)}")
    if not file.is_file():
        raise UsageError(f"{where} {text!r}: no such file {file}")
    if function not in _top_level_names(file, where):
        raise UsageError(f"{where} {text!r}: {file} defines no function {function!r} at its top level")
    return file


def load_function(text: str, file: Path, where: str) -> Callable[..., Any]:
    """The function ``text`` names in ``file``, the file executed once per process."""
    function_name = text.rpartition(":")[2]
    if file not in _loaded_files:
        name = "mcudeploy_sweep_plugin_" + hashlib.sha256(str(file).encode()).hexdigest()[:12]
        specification = importlib.util.spec_from_file_location(name, file)
        if specification is None or specification.loader is None:
            raise UsageError(f"{where} {file} is not a Python file")
        module = importlib.util.module_from_spec(specification)
        try:
            specification.loader.exec_module(module)
        except Exception as error:
            raise UsageError(f"{where} loading {file} raised {type(error).__name__}: {error}") from None
        _loaded_files[file] = module
    function = getattr(_loaded_files[file], function_name, None)
    if not callable(function):
        raise UsageError(f"{where} {text!r}: {file} has no function {function_name!r}")
    return function
