"""Cell expansion: the product of a sweep's axes, each cell with its configuration and its hash.

    cells = expand_cells(spec, models)     # models: one (ModelSource, Blob | failure text) per model

Axis order (the cell index runs over the last axis fastest): models, input shapes, targets,
quantization, objectives, option sets, then each ``[axes.options]`` field in file order.

A cell's **configuration** is everything that decides its result, files by content: its
axis values as the table shows them (a plugin stage may read them), the model's SHA-256, the target (a built-in name, or a target file's SHA-256), the
input shapes, the quantization, the objective, every deployment option (memory pools by
SHA-256), the stages, the data files' SHA-256 and the data / search settings the stages read,
the plugin stages. :attr:`Cell.config_hash` is the run store's hash of it
(:func:`mcudeploy.runs.live.config_hash`): a resumed sweep finds a finished cell by it.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..runs.live import config_hash
from .blobs import Blob, blob_of_file
from .catalogue import is_plugin
from .sources import ModelSource
from .spec import SweepSpec
from .toml_reader import expand_path

CONFIG_SCHEMA = 1
DATA_STAGES = ("quantize", "validate")


@dataclass(frozen=True)
class Cell:
    index: int
    model: ModelSource
    target: str | None                     # built-in name, or a target file's path
    input_shapes: dict[str, tuple[int, ...]]
    quantization: str
    objective: str | None
    option_set: str
    option_values: tuple[tuple[str, Any], ...]     # the [axes.options] values of this cell
    options: dict[str, Any]                        # DeploymentOptions.to_dict() of the cell
    stages: tuple[str, ...]
    blobs: dict[str, Blob] = field(default_factory=dict)     # role -> file: model, target, data, plugins
    settings: dict[str, Any] = field(default_factory=dict)   # data / search settings the stages read
    failure: str | None = None             # the model could not be made (generator error)

    @property
    def target_label(self) -> str:
        return "-" if self.target is None else Path(self.target).stem if "/" in self.target else self.target

    def parameters(self) -> dict[str, Any]:
        """The cell's axis values (the table's leading columns)."""
        shapes = ";".join(f"{n}={'x'.join(map(str, s))}" for n, s in self.input_shapes.items()) or "declared"
        return {"cell": self.index, "model": self.model.label, "target": self.target_label, "input_shapes": shapes,
                "quantization": self.quantization, "objective": self.objective,
                "option_set": self.option_set, **{name: value for name, value in self.option_values}}

    @property
    def config(self) -> dict[str, Any]:
        blobs = {role: blob.sha256 for role, blob in sorted(self.blobs.items())}
        options = {**self.options, "target": blobs.get("target", self.target),
                   "memory_pools": blobs.get("memory_pools")}
        axes = {name: value for name, value in self.parameters().items() if name != "cell"}
        return {"sweep_cell": CONFIG_SCHEMA, "axes": axes, "model_sha256": blobs.get("model"),
                "model": None if blobs.get("model") else self.model.describe(), "options": options,
                "input_shapes": {name: list(shape) for name, shape in self.input_shapes.items()},
                "quantization": self.quantization, "objective": self.objective, "stages": list(self.stages),
                "files": {role: sha for role, sha in blobs.items() if role not in ("model", "target", "memory_pools")},
                "settings": self.settings}

    @property
    def config_hash(self) -> str:
        return config_hash(self.config)

    def request(self) -> dict[str, Any]:
        """What the cell process needs (plain JSON): the cell, and its files by SHA-256."""
        options = {key: value for key, value in self.options.items() if key not in ("target", "memory_pools")}
        return {"index": self.index, "model": self.model.label, "parameters": self.parameters(),
                "target": self.target if "target" not in self.blobs else None, "options": options,
                "input_shapes": {name: list(shape) for name, shape in self.input_shapes.items()},
                "quantization": self.quantization, "objective": self.objective, "stages": list(self.stages),
                "settings": self.settings, "blobs": {role: [b.sha256, b.name] for role, b in self.blobs.items()}}


def _settings(spec: SweepSpec) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    if any(stage in DATA_STAGES for stage in spec.stages):
        data = spec.data
        settings["data"] = {"calibration": "random" if data.calibration == "random" else None,
                            "calibration_samples": data.calibration_samples, "samples": data.samples,
                            "value_range": list(data.value_range)}
    if "quantize" in spec.stages:
        settings["quantize"] = {"io": spec.quantize_io}
    if "search" in spec.stages:
        settings["search"] = {"budget": spec.search_budget, "time": spec.search_time}
    plugins = [stage for stage in spec.stages if is_plugin(stage)]
    if plugins:
        settings["plugins"] = {name: name if name not in spec.plugins else f"file:{name}" for name in plugins}
    return settings


def _shared_blobs(spec: SweepSpec) -> dict[str, Blob]:
    """The files every cell reads: data files and plugin files."""
    blobs = {}
    if any(stage in DATA_STAGES for stage in spec.stages):
        blobs.update({role: blob_of_file(path) for role, path in spec.data.files().items()})
    for name, path in spec.plugins.items():
        blobs[f"plugin:{name}"] = blob_of_file(path)
    return blobs


def _option_combinations(spec: SweepSpec):
    names = [name for name, _ in spec.option_axes]
    for option_set in spec.option_sets:
        for values in itertools.product(*(values for _, values in spec.option_axes)):
            yield option_set, tuple(zip(names, values))


def _cell_options(spec: SweepSpec, target: str | None, option_set, option_values) -> tuple[dict, Blob | None]:
    options = spec.base_options.with_values(**{**dict(option_set.values), **dict(option_values)})   # axes win
    pools = None
    if options.memory_pools is not None:
        path = expand_path(options.memory_pools, spec.folder, f"{spec.path}: memory_pools:")
        if not path.is_file():
            raise UsageError(f"{spec.path}: memory_pools {options.memory_pools!r}: no such file {path}")
        pools = blob_of_file(path)
    return options.to_dict() | {"target": target}, pools


def expand_cells(spec: SweepSpec, models: list[tuple[ModelSource, Blob | str]]) -> list["Cell"]:
    """Every cell of ``spec`` (module docstring); ``models`` pairs each model with its blob
    or the text of the generator's failure."""
    shared, settings = _shared_blobs(spec), _settings(spec)
    targets = {target: blob_of_file(Path(target)) for target in spec.targets if target and "/" in target}
    cells: list[Cell] = []
    for (source, made), shapes, target, quantization, objective, (option_set, values) in itertools.product(
            models, spec.input_shapes, spec.targets, spec.quantization, spec.objectives,
            list(_option_combinations(spec))):
        options, pools = _cell_options(spec, target, option_set, values)
        blobs = dict(shared)
        if isinstance(made, Blob):
            blobs["model"] = made
        if target in targets:
            blobs["target"] = targets[target]
        if pools is not None:
            blobs["memory_pools"] = pools
        cells.append(Cell(len(cells), source, target, shapes, quantization, objective, option_set.name, values,
                          options, spec.stages, blobs, settings, None if isinstance(made, Blob) else made))
    return cells
