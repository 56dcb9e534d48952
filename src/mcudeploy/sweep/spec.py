"""The sweep file: axes of a design space, the stages each cell runs and the metrics kept.

    spec = load_sweep("sweep.toml")        # -> SweepSpec, every value checked

Format (every key optional unless marked; relative paths are relative to the sweep file,
``${VAR}`` / ``${VAR:-default}`` are expanded)::

    [sweep]
    name = "shared-models"             # tags the cells' runs (default: the file's stem)
    stages = ["plan", "estimate"]      # required: analyze quantize validate plan estimate search
                                       # generate qemu, or plugins "file.py:function"
    metrics = ["arena_bytes", "latency_ms"]   # the table's columns (default: every metric of the stages)
    timeout = 600                      # seconds per cell attempt; a cell over it is killed, marked timeout
    retries = 2                        # new attempts after a lost worker or a crashed cell process
    models_root = "${MCUDEPLOY_SHARED:-../../shared}/models"   # base of relative model paths

    [axes]                             # the cells are the product of every axis
    models = ["mlperf_tiny/resnet8_int8.tflite"]   # model files (and / or [[generators]])
    targets = ["stm32h743", "stm32n6"]             # built-in names or target .toml files
    input_shapes = [{}, {input = [1, 3, 96, 96]}]  # {} = as the model declares
    quantization = ["int8", "int16", "mixed"]      # with stage quantize; "as-is" keeps the model
    objectives = ["memory", "latency"]             # with stage search
    option_sets = [{name = "default"}, {name = "no-reuse", reuse = false}]
    [axes.options]                                 # one axis per DeploymentOptions field
    sram_limit = ["256K", "512K"]

    [[generators]]                     # models made by a Python callable, one per parameter set
    callable = "make_model.py:make_model"   # a function of a .py file in this folder (see below)
    name = "unet"
    parameters = {size = {start = 128, stop = 512, step = 32}, upsample = ["nearest"]}

    [options]                          # DeploymentOptions fields for every cell
    external_activations = false

    [data]                             # for quantize / validate
    calibration = "calib.npz"          # or "random": uniform inputs in value_range (memory and
    calibration_samples = 16           #   latency studies only: ranges are not the data's)
    validation = "val.npz"             # default: random inputs
    labels = "labels.npy"
    samples = 32
    value_range = [0.0, 1.0]

    [quantize]
    io = "float"                       # float inputs / outputs (as mcudeploy quantize), or "int8":
                                       #   integer I/O, the application quantizes (no I/O conversion layers)

    [search]
    budget = 20                        # trials per cell
    time = 60                          # seconds per cell's search (optional)

A sweep file is code: its generators and plugin stages run with your rights. They may name
only ``"file.py:function"`` with the file inside the sweep file's folder (or mcudeploy's own
``tools/make_unet.py:make_unet``); a module form such as ``"shutil:rmtree"`` is refused
(:mod:`.callables`). Loading a sweep file (and ``mcudeploy sweep --list``) runs none of them.

Every problem is one :class:`~mcudeploy.errors.UsageError` naming the file and key (exit 2).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, overload

from ..errors import UsageError
from ..options import DeploymentOptions
from ..text_inputs import read_toml
from .catalogue import CATALOGUE, expand_stages, is_plugin, stage_metrics
from .spec_axes import (
    GeneratorSpec,
    OptionSet,
    check_targets,
    input_shape_axis,
    option_axes,
    option_sets,
    parse_generators,
    parse_options,
    quantization_axis,
)
from .toml_reader import TableReader, check_keys, closest, expand_path

SECTIONS = ("sweep", "axes", "generators", "options", "data", "quantize", "search")
SWEEP_KEYS = ("name", "stages", "metrics", "timeout", "retries", "models_root")
AXES_KEYS = ("models", "targets", "input_shapes", "quantization", "objectives", "option_sets", "options")
DATA_KEYS = ("calibration", "calibration_samples", "validation", "labels", "samples", "value_range")
SEARCH_KEYS = ("budget", "time")
QUANTIZE_IO = ("float", "int8")
OBJECTIVES = ("memory", "latency", "balanced")       # mcudeploy.search.pareto.OBJECTIVES
RANDOM = "random"
DEFAULT_TIMEOUT_S = 600.0
DEFAULT_RETRIES = 2
MAX_TIMEOUT_S = 30 * 24 * 3600.0        # a cell's timeout: finite, and a wait the event loop can hold
MAX_RETRIES = 100
WORKERS_PER_CORE = 4                    # local workers at most (each runs a cell process)


def max_local_workers() -> int:
    """The most local workers ``--workers`` may ask for: :data:`WORKERS_PER_CORE` per core."""
    return WORKERS_PER_CORE * (os.cpu_count() or 1)


@dataclass(frozen=True)
class DataSpec:
    """Data files of the quantize / validate stages (``calibration`` may be :data:`RANDOM`)."""
    calibration: Path | str | None = None
    calibration_samples: int = 16
    validation: Path | None = None
    labels: Path | None = None
    samples: int = 32
    value_range: tuple[float, float] = (0.0, 1.0)

    def files(self) -> dict[str, Path]:
        found = {"calibration": self.calibration, "validation": self.validation, "labels": self.labels}
        return {role: path for role, path in found.items() if isinstance(path, Path)}


@dataclass(frozen=True)
class SweepSpec:
    path: Path
    name: str
    stages: tuple[str, ...]                 # what a cell runs (needs added, in order)
    metrics: tuple[str, ...]                # the table's columns
    timeout: float = DEFAULT_TIMEOUT_S
    retries: int = DEFAULT_RETRIES
    models: tuple[Path, ...] = ()
    generators: tuple[GeneratorSpec, ...] = ()
    targets: tuple[str | None, ...] = (None,)
    input_shapes: tuple[dict[str, tuple[int, ...]], ...] = ({},)
    quantization: tuple[str, ...] = ("as-is",)
    objectives: tuple[str | None, ...] = (None,)
    option_sets: tuple[OptionSet, ...] = (OptionSet("default", ()),)
    option_axes: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    base_options: DeploymentOptions = DeploymentOptions()
    data: DataSpec = DataSpec()
    quantize_io: str = "float"              # [quantize] io
    search_budget: int = 20
    search_time: float | None = None
    plugins: dict[str, Path] = field(default_factory=dict)   # plugin stage -> its file (file.py form)

    @property
    def folder(self) -> Path:
        return self.path.parent

    def input_files(self) -> list[Path]:
        """Every file the sweep reads (the sweep file, models, target files, data, generator and
        plugin files): no output may be one of them."""
        targets = [Path(target) for target in self.targets if target and "/" in target]
        generators = [generator.file for generator in self.generators if generator.file is not None]
        return [self.path, *self.models, *targets, *self.data.files().values(), *generators,
                *self.plugins.values()]


def load_sweep(path: str | Path) -> SweepSpec:
    """The sweep file at ``path``, parsed and checked (module docstring)."""
    path = Path(path)
    return parse_sweep(read_toml(path, "sweep file"), path)


def parse_sweep(document: dict[str, Any], path: Path) -> SweepSpec:
    """A :class:`SweepSpec` from a parsed sweep file at ``path``."""
    source, folder = str(path), path.resolve().parent
    check_keys(document, SECTIONS, f"{source}:", noun="section")
    sweep = TableReader(document.get("sweep", {}), source, "[sweep]", SWEEP_KEYS)
    axes = TableReader(document.get("axes", {}), source, "[axes]", AXES_KEYS)
    requested = _stages(sweep)
    stages = expand_stages(requested)
    root = expand_path(sweep.text("models_root", "."), folder, sweep.where("models_root"))
    generators = parse_generators(document.get("generators", []), source, folder)
    models = _model_files(axes, root)
    if not models and not generators:
        raise UsageError(f"{source}: no models: give [axes] models = [\"model.tflite\", ...] or a [[generators]] table")
    base = parse_options(document.get("options", {}), source)
    spec_targets = _targets(axes, folder, stages, base)
    return SweepSpec(
        path=path.resolve(), name=sweep.text("name", path.stem), stages=stages,
        metrics=_metrics(sweep, stages), timeout=_bounded(sweep.number("timeout", DEFAULT_TIMEOUT_S), MAX_TIMEOUT_S, sweep.where("timeout")),
        retries=_bounded(sweep.integer("retries", DEFAULT_RETRIES), MAX_RETRIES, sweep.where("retries")), models=models, generators=generators,
        targets=spec_targets, input_shapes=input_shape_axis(axes),
        quantization=quantization_axis(axes, stages), objectives=_objectives(axes, stages),
        option_sets=option_sets(axes), option_axes=option_axes(axes), base_options=base,
        data=_data(document.get("data", {}), source, folder, stages), **_search(document.get("search", {}), source),
        quantize_io=_quantize_io(document.get("quantize", {}), source),
        plugins=_plugins(requested, source, folder))


def _bounded(value, most, where: str):
    if value > most:
        raise UsageError(f"{where} {value!r} is more than {most:,g}; give a smaller value")
    return value


def _stages(sweep: TableReader) -> tuple[str, ...]:
    if not sweep.has("stages"):
        raise UsageError(f"{sweep.where('stages')} missing; say what each cell runs, e.g. stages = [\"plan\", "
                         f"\"estimate\"] (stages: {', '.join(CATALOGUE)})")
    names = sweep.texts("stages")
    assert names is not None  # checked just above (has)
    for name in names:
        if not is_plugin(name) and name not in CATALOGUE:
            raise UsageError(f"{sweep.where('stages')} unknown stage {name!r}{closest(name, CATALOGUE)} (stages: "
                             f"{', '.join(CATALOGUE)}, or a plugin \"file.py:function\")")
    return tuple(dict.fromkeys(names))


def _metrics(sweep: TableReader, stages: tuple[str, ...]) -> tuple[str, ...]:
    known = stage_metrics(stages)
    names = sweep.texts("metrics")
    if names is None:
        return known
    if not any(is_plugin(stage) for stage in stages):
        for name in names:
            if name not in known:
                raise UsageError(f"{sweep.where('metrics')} {name!r} is not a metric of the stages "
                                 f"{', '.join(stages)}{closest(name, known)} (their metrics: {', '.join(known)})")
    return tuple(dict.fromkeys(names))


def _model_files(axes: TableReader, root: Path) -> tuple[Path, ...]:
    paths = []
    for index, text in enumerate(axes.texts("models") or []):
        where = axes.where(f"models[{index}]")
        path = expand_path(text, root, where)
        if not path.is_file():
            raise UsageError(f"{where} no such model file {path} (relative paths are from models_root {root})")
        paths.append(path.resolve())
    return tuple(paths)


def _targets(axes: TableReader, folder: Path, stages: tuple[str, ...], base: DeploymentOptions) -> tuple:
    names = axes.texts("targets")
    if names is None:
        needed = [s for s in stages if s in ("plan", "estimate", "search", "generate", "qemu")]
        if needed:
            raise UsageError(f"{axes.where('targets')} missing; stage {needed[0]} needs a target: give "
                             "targets = [\"stm32h743\", ...] (see 'mcudeploy targets')")
        return (None,)
    return check_targets(names, axes, folder)


def _objectives(axes: TableReader, stages: tuple[str, ...]) -> tuple[str | None, ...]:
    names = axes.texts("objectives")
    if names is None:
        return ("memory",) if "search" in stages else (None,)
    if "search" not in stages:
        raise UsageError(f"{axes.where('objectives')} search objectives need the search stage; add \"search\" to "
                         "[sweep] stages or remove the axis")
    for name in names:
        if name not in OBJECTIVES:
            raise UsageError(f"{axes.where('objectives')} {name!r} is not an objective{closest(name, OBJECTIVES)} "
                             f"(objectives: {', '.join(OBJECTIVES)})")
    return tuple(names)


@overload
def _data_file(data: TableReader, key: str, folder: Path, allow_random: Literal[False] = False) -> Path | None: ...
@overload
def _data_file(data: TableReader, key: str, folder: Path, allow_random: bool) -> Path | str | None: ...
def _data_file(data: TableReader, key: str, folder: Path, allow_random: bool = False) -> Path | str | None:
    text = data.text(key)
    if text is None or (allow_random and text == RANDOM):
        return text
    path = expand_path(text, folder, data.where(key))
    if not path.is_file():
        raise UsageError(f"{data.where(key)} no such file {path}; give a .npy / .npz file"
                         + (f" or \"{RANDOM}\"" if allow_random else ""))
    return path.resolve()


def _data(table: Any, source: str, folder: Path, stages: tuple[str, ...]) -> DataSpec:
    data = TableReader(table, source, "[data]", DATA_KEYS)
    calibration = _data_file(data, "calibration", folder, allow_random=True)
    if "quantize" in stages and calibration is None:
        raise UsageError(f"{data.where('calibration')} missing; stage quantize needs calibration data (a .npy / "
                         f"npz file, or \"{RANDOM}\" for memory and latency studies)")
    value_range = data.table.get("value_range", [0.0, 1.0])
    if not (isinstance(value_range, list) and len(value_range) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value_range)
            and value_range[0] < value_range[1]):
        raise UsageError(f"{data.where('value_range')} expected [LOW, HIGH] with LOW < HIGH, got {value_range!r}")
    return DataSpec(calibration, data.integer("calibration_samples", 16, minimum=1),
                    _data_file(data, "validation", folder), _data_file(data, "labels", folder),
                    data.integer("samples", 32, minimum=1), (float(value_range[0]), float(value_range[1])))


def _search(table: Any, source: str) -> dict[str, Any]:
    search = TableReader(table, source, "[search]", SEARCH_KEYS)
    time = search.number("time", 1.0) if search.has("time") else None
    return {"search_budget": search.integer("budget", 20, minimum=1), "search_time": time}


def _quantize_io(table: Any, source: str) -> str:
    io = TableReader(table, source, "[quantize]", ("io",)).text("io", "float")
    if io not in QUANTIZE_IO:
        raise UsageError(f"{source}: [quantize] io: {io!r} is not one of {', '.join(QUANTIZE_IO)}")
    return io


def _plugins(requested: tuple[str, ...], source: str, folder: Path) -> dict[str, Path]:
    """Plugin stages (``file.py:function``, the file in the sweep's folder: :mod:`.callables`)
    -> the file, checked without running it."""
    from .callables import confined_callable

    return {name: confined_callable(name, folder, f"{source}: [sweep] stages: plugin")
            for name in requested if is_plugin(name)}
