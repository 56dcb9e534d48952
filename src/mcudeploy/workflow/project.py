"""The project file ``mcudeploy.toml``: one model, one target, the data and thresholds of the
staged deployment (``mcudeploy deploy``), as one checked, frozen :class:`Project` record.

Input: a TOML file (format: :mod:`.project_keys` for ``[project]``, ``[calibration]``,
``[validation]``, ``[lint]``, ``[generate]``; the deployment options of
:mod:`mcudeploy.options` under ``[deployment.<section>]``, i.e. ``[deployment.memory]`` of a
project file is ``[memory]`` of a ``--config`` file). Output: :class:`Project`, paths
resolved against the file's folder.

Every problem is one :class:`~mcudeploy.errors.UsageError` (exit 2) naming the file, the
section and the key, and what to do: an unknown section or key with the closest known one
(``difflib``: "unknown key 'sram_limt' in [deployment.memory]; did you mean 'sram_limit'?"),
a wrong type, a negative size or count, a value out of range, a model file that does not
exist, a path holding a NUL character, a ``[project] name`` that is not a plain name (it
names files deploy writes: ``<name>_int8.onnx``; a separator, ``..``, an absolute path or a
control character would put them elsewhere), an output folder that is a symlink out of the
project folder (:class:`~mcudeploy.errors.UnsafePathError`). Nothing is read further after
the first problem.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UnsafePathError, UsageError, did_you_mean
from ..options import SECTIONS as OPTION_SECTIONS
from ..options import DeploymentOptions, parse_options
from ..preprocess.spec import PREPROCESS_SECTION, parse_preprocess
from ..text_inputs import check_readable, parse_toml, read_text
from .project_keys import DEPLOYMENT_SECTION, SECTIONS, ProjectKey

PROJECT_FILE = "mcudeploy.toml"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Project:
    """A checked project file (module docstring). ``settings[section][key]`` holds every key of
    :mod:`.project_keys` (the file's value or the default); paths are absolute."""
    path: Path
    settings: dict[str, dict[str, Any]]
    deployment: DeploymentOptions
    document: dict[str, Any] = field(default_factory=dict, repr=False)   # the file as parsed

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def model(self) -> Path:
        return self.settings["project"]["model"]

    @property
    def name(self) -> str:
        return self.settings["project"]["name"] or self.model.stem

    @property
    def output(self) -> Path:
        return self.settings["project"]["output"]

    def section(self, name: str) -> dict[str, Any]:
        return self.settings[name]

    def preprocess(self):
        """The checked ``[preprocess]`` spec, or None (:mod:`mcudeploy.preprocess.spec`)."""
        table = self.document.get(PREPROCESS_SECTION)
        return None if table is None else parse_preprocess(table, f"{self.path}: [{PREPROCESS_SECTION}]")

    def locked_options(self) -> frozenset[str]:
        """The :class:`DeploymentOptions` fields the file sets (a search never varies them)."""
        tables = self.document.get(DEPLOYMENT_SECTION, {})
        return frozenset(OPTION_SECTIONS[section][key].field for section, table in tables.items() for key in table)

    def config(self) -> dict[str, Any]:
        """Every setting as flat JSON-able ``section.key`` values (paths relative to the
        project folder): what a stage run records as its configuration."""
        flat: dict[str, Any] = {}
        for section, values in self.settings.items():
            for key, value in values.items():
                if isinstance(value, Path):
                    value = _relative(value, self.folder)
                flat[f"{section}.{key}"] = value
        for key, value in self.deployment.to_dict().items():
            flat[f"deployment.{key}"] = value
        return flat


def _relative(path: Path, folder: Path) -> str:
    try:
        return str(path.relative_to(folder))
    except ValueError:
        return str(path)


def suggestion(word: str, known, *, listed: bool = True) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``known``; else the known names (``listed``)
    or nothing."""
    hint = did_you_mean(word, known)
    if hint:
        return hint
    return f"; known: {', '.join(known)}" if listed else ""


def _where(source: str, section: str, key: str) -> str:
    return f"{source}: [{section}] {key}"


def _number(value: Any, spec: ProjectKey, where: str, integer: bool) -> int | float:
    valid = not isinstance(value, bool) and (isinstance(value, int) if integer else isinstance(value, (int, float)))
    if not valid or not math.isfinite(value):
        raise UsageError(f"{where}: expected {'an integer' if integer else 'a number'}, got {value!r}")
    if spec.minimum is not None and value < spec.minimum:
        raise UsageError(f"{where}: must be at least {spec.minimum:g}, got {value!r}")
    if spec.maximum is not None and value > spec.maximum:
        raise UsageError(f"{where}: must be at most {spec.maximum:g}, got {value!r}")
    return value if integer else float(value)


def _shapes(value: Any, where: str) -> dict[str, tuple[int, ...]]:
    if not isinstance(value, dict):
        raise UsageError(f"{where}: expected a table NAME = [d1, d2, ...], got {value!r}")
    shapes = {}
    for name, dims in value.items():
        if not isinstance(dims, list) or not dims or any(isinstance(d, bool) or not isinstance(d, int) or d < 1
                                                         for d in dims):
            raise UsageError(f"{where}: {name} = {dims!r}: give a list of positive integers, e.g. [1, 3, 224, 224]")
        shapes[name] = tuple(dims)
    return shapes


def check_value(spec: ProjectKey, value: Any, where: str, folder: Path) -> Any:
    """``value`` of key ``spec`` checked (and paths resolved against ``folder``)."""
    kind = spec.kind
    if kind in ("int", "float"):
        return _number(value, spec, where, kind == "int")
    if kind == "bool":
        if not isinstance(value, bool):
            raise UsageError(f"{where}: expected true or false, got {value!r}")
        return value
    if kind == "shapes":
        return _shapes(value, where)
    if kind == "floats":
        values = value if isinstance(value, list) else [value]
        if not values or any(isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
                             for v in values):
            raise UsageError(f"{where}: expected a list of finite numbers, got {value!r}")
        return [float(v) for v in values]
    if kind == "choices":
        if not isinstance(value, list) or any(not isinstance(v, str) for v in value):
            raise UsageError(f"{where}: expected a list of names from {', '.join(spec.choices)}, got {value!r}")
        for entry in value:
            if entry not in spec.choices:
                raise UsageError(f"{where}: {entry!r} is not one of {', '.join(spec.choices)}"
                                 + suggestion(entry, spec.choices, listed=False))
        return list(dict.fromkeys(value))
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{where}: expected non-empty text, got {value!r}")
    if kind == "path" and "\x00" in value:
        raise UsageError(f"{where}: {value!r} holds a NUL character, which no file name can; give the path")
    if kind == "choice" and value not in spec.choices:
        raise UsageError(f"{where}: {value!r} is not one of {', '.join(spec.choices)}"
                         + suggestion(value, spec.choices, listed=False))
    return (folder / value).resolve() if kind == "path" else value


def _table(document: dict[str, Any], source: str, section: str) -> dict[str, Any]:
    table = document.get(section, {})
    if not isinstance(table, dict):
        raise UsageError(f"{source}: [{section}] must be a table of keys, got {table!r}")
    return table


def _settings(document: dict[str, Any], source: str, folder: Path) -> dict[str, dict[str, Any]]:
    for section in document:
        if section not in SECTIONS and section not in (DEPLOYMENT_SECTION, PREPROCESS_SECTION):
            raise UsageError(f"{source}: unknown section [{section}]"
                             + suggestion(section, [*SECTIONS, DEPLOYMENT_SECTION, PREPROCESS_SECTION]))
    if PREPROCESS_SECTION in document:   # checked by its own reader (mcudeploy.preprocess.spec)
        parse_preprocess(document[PREPROCESS_SECTION], f"{source}: [{PREPROCESS_SECTION}]")
    settings: dict[str, dict[str, Any]] = {}
    for section, specs in SECTIONS.items():
        table = _table(document, source, section)
        for key in table:
            if key not in specs:
                raise UsageError(f"{source}: unknown key {key!r} in [{section}]" + suggestion(key, specs))
        values = {}
        for key, spec in specs.items():
            if key in table:
                values[key] = check_value(spec, table[key], _where(source, section, key), folder)
            elif spec.required:
                raise UsageError(f"{_where(source, section, key)} is required: {spec.help}")
            else:
                values[key] = (folder / spec.default).resolve() if spec.kind == "path" and spec.default else spec.default
        settings[section] = values
    return settings


def _deployment(document: dict[str, Any], source: str) -> DeploymentOptions:
    """``[deployment.*]``: the options of :mod:`mcudeploy.options`, checked by it, with the
    same "did you mean" help for unknown sections and keys."""
    tables = _table(document, source, DEPLOYMENT_SECTION)
    for section, table in tables.items():
        where = f"[{DEPLOYMENT_SECTION}.{section}]"
        if section not in OPTION_SECTIONS:
            raise UsageError(f"{source}: unknown section {where}" + suggestion(section, OPTION_SECTIONS))
        if not isinstance(table, dict):
            raise UsageError(f"{source}: {where} must be a table of keys, got {table!r}")
        for key in table:
            if key not in OPTION_SECTIONS[section]:
                raise UsageError(f"{source}: unknown key {key!r} in {where}" + suggestion(key, OPTION_SECTIONS[section]))
    try:
        options = parse_options(tables, source)
    except UsageError as error:   # name the section as it is written in this file
        text = str(error)
        for section in tables:
            text = text.replace(f": [{section}] ", f": [{DEPLOYMENT_SECTION}.{section}] ")
        raise UsageError(text) from None
    return _files_beside(options, Path(source).parent)


def _files_beside(options: DeploymentOptions, folder: Path) -> DeploymentOptions:
    """A target file or memory-pool file named relative to the project file, made absolute (a
    built-in target name stays as it is)."""
    values = {}
    if options.target is not None and (options.target.endswith(".toml") or "/" in options.target):
        values["target"] = str((folder / options.target).resolve())
    if options.memory_pools is not None:
        values["memory_pools"] = str((folder / options.memory_pools).resolve())
    return options.with_values(**values) if values else options


def _check_name(name: str | None, source: str) -> None:
    """``[project] name`` names files in the output folder: a plain name only (module docstring)."""
    if name is None:
        return
    if name in (".", "..") or "/" in name or "\\" in name or _CONTROL.search(name) or os.path.isabs(name):
        raise UsageError(f"{source}: [project] name {name!r}: give a plain name (no folder separator, no '..', no "
                         "control character): it names the files deploy writes in its output folder, e.g. "
                         "<name>_int8.onnx; the folder is [project] output")


def _check_output_link(document: dict[str, Any], output: Path, folder: Path, source: str) -> None:
    """:class:`UnsafePathError` for an output folder named inside the project folder that a
    symlink takes out of it (writing there would change files elsewhere)."""
    raw = document.get("project", {}).get("output", "deploy")
    lexical = Path(os.path.normpath(folder / str(raw)))
    if lexical.is_relative_to(folder) and not output.is_relative_to(folder):
        link = next((p for p in (lexical, *lexical.parents) if p.is_symlink()), lexical)
        raise UnsafePathError(f"{source}: [project] output {raw!r}: {link} is a symbolic link to {output}, out of the "
                              "project folder; deploy would write there. Remove the link or give that folder itself")


def _check_files(settings: dict[str, dict[str, Any]], source: str) -> None:
    model = settings["project"]["model"]
    if not model.is_file():
        raise UsageError(f"{source}: [project] model {model}: no such file (paths are relative to the project "
                         "file's folder); give the ONNX / TFLite model to deploy")
    check_readable(model, f"{source}: [project] model")      # /proc/self/mem: one line, before any stage
    for section, key in (("calibration", "data"), ("validation", "data"), ("validation", "labels")):
        path = settings[section][key]
        if path is not None and not path.exists():
            raise UsageError(f"{source}: [{section}] {key} {path}: no such file or folder (paths are relative "
                             "to the project file's folder)")
    output = settings["project"]["output"]
    if output.exists() and not output.is_dir():
        raise UsageError(f"{source}: [project] output {output} is a file; give a folder")
    if any(value == 0 for value in settings["calibration"]["std"]):
        raise UsageError(f"{source}: [calibration] std {settings['calibration']['std']}: a standard deviation of "
                         "0 divides by zero; give non-zero values")


def parse_project(text: str, path: Path) -> Project:
    """A :class:`Project` from the TOML ``text`` of the file at ``path`` (module docstring)."""
    path = Path(path).resolve()
    source = str(path)
    document = parse_toml(text, source)
    settings = _settings(document, source, path.parent)
    _check_name(settings["project"]["name"], source)
    _check_output_link(document, settings["project"]["output"], path.parent, source)
    deployment = _deployment(document, source)
    _check_files(settings, source)
    return Project(path, settings, deployment, document)


def load_project(path: str | Path | None = None) -> Project:
    """The project file at ``path`` (default: ``mcudeploy.toml`` in the current folder)."""
    path = Path(path) if path is not None else Path(PROJECT_FILE)
    if path.is_dir():
        path = path / PROJECT_FILE
    if not path.exists():
        raise UsageError(f"{path}: no such project file; write one with 'mcudeploy init MODEL'")
    text = read_text(path, "project file")    # a FIFO, a device or a huge file: one error line
    return parse_project(text, path)
