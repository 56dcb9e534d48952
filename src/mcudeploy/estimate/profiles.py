"""Core families and runtime profiles of the estimator, read from ``data/cores.toml`` and
``data/runtimes.toml`` (the constants live there, with their sources, not in code).

:func:`core_model` matches a target's core name to a :class:`CoreModel` (its build, its
instruction factors and CPI per code class); :func:`runtime_profile` gives a
:class:`RuntimeProfile`. An overlay (:mod:`.overlay`) returns modified copies of both.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from functools import lru_cache

from ..errors import UsageError
from ..package_data import package_folder
from ..targets import Core, TargetError
from ..targets.model import core_key

CODE_CLASSES = ("scalar", "dsp", "mve")


@dataclass(frozen=True)
class CoreModel:
    """The cycle model of one core family."""
    family: str
    build: str
    instruction_factor: dict[str, float]
    cpi: dict[str, float]
    sources: tuple[str, ...] = ()
    calibrated: str = ""                  # overlay file that changed the cpi, if any

    def cycles(self, instructions: float, code_class: str) -> float:
        return instructions * self.instruction_factor[code_class] * self.cpi[code_class]

    def with_cpi(self, cpi: dict[str, float], source: str) -> "CoreModel":
        return replace(self, cpi={**self.cpi, **cpi}, calibrated=source)


@dataclass(frozen=True)
class RuntimeProfile:
    """What one runtime's kernels cost."""
    name: str
    description: str
    instructions: str
    code_class: dict[str, str]
    traffic: str
    pixel_block: int = 1
    blocked_variants: dict[str, int] = field(default_factory=dict)
    per_layer_instructions: float = 0.0
    per_inference_instructions: float = 0.0
    kernel_classes: dict[str, str] = field(default_factory=dict)   # kernel -> calibration class
    class_scale: dict[str, float] = field(default_factory=dict)    # overlay: class -> factor
    scale: float = 1.0                   # overlay: measured / estimated for this runtime label
    label: str = ""                      # the overlay's runtime label (e.g. "x-cube-ai 10.2")

    def kernel_scale(self, kernel: str) -> float:
        """The overlay's factor of a kernel's class (1 when uncalibrated or not in a class)."""
        return self.class_scale.get(self.kernel_classes.get(kernel.removesuffix("_s16"), ""), 1.0)

    def class_of(self, variant: str, helium: bool) -> str:
        """The code class of a kernel variant: its own entry, its extension's ("dsp-conv" ->
        "dsp"), else the build's default."""
        for key in (variant, variant_extension(variant)):
            if key in self.code_class and key != "default":
                return self.code_class[key]
        return self.code_class.get("helium" if helium else "default", "scalar")

    def pixel_block_of(self, variant: str) -> int | None:
        """Output pixels per weight pass of a blocked kernel variant (None: not blocked)."""
        for key in (variant, variant_extension(variant)):
            if key in self.blocked_variants:
                return int(self.blocked_variants[key])
        return None


def variant_extension(variant: str) -> str:
    """The instruction-set extension a kernel variant is written for: "dsp-conv" -> "dsp"."""
    return variant.split("-", 1)[0]


@lru_cache(maxsize=None)
def _read(name: str) -> dict:
    """The parsed data file ``name`` (read once per process; callers copy what they keep)."""
    return tomllib.loads((package_folder(__package__) / "data" / name).read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def core_models() -> dict[str, CoreModel]:
    models = {}
    for family, table in _read("cores.toml").items():
        models[family] = CoreModel(family, table["build"], dict(table["instruction_factor"]), dict(table["cpi"]),
                                   tuple(table.get("sources", ())))
    return models


@lru_cache(maxsize=1)
def _core_names() -> dict[str, str]:
    return {_normal(name): family for family, table in _read("cores.toml").items() for name in table["names"]}


def _normal(name: str) -> str:
    return core_key(name)      # Cortex-M4F -> cortex-m4, Cortex-M55-class -> cortex-m55


def core_model(core: Core, source: str = "") -> CoreModel:
    """The family of ``core``; a :class:`TargetError` naming the known families otherwise."""
    family = _core_names().get(_normal(core.name))
    if family is None:
        raise TargetError(f"{source or 'target'}: [core] name {core.name!r} is not a core the estimator knows; "
                          f"use one of {', '.join(sorted({n for t in _read('cores.toml').values() for n in t['names']}))}")
    return core_models()[family]


@lru_cache(maxsize=1)
def runtime_profiles() -> dict[str, RuntimeProfile]:
    profiles = {}
    for name, table in _read("runtimes.toml").items():
        classes = {kernel: group for group, kernels in table.get("kernel_classes", {}).items() for kernel in kernels}
        profiles[name] = RuntimeProfile(name, table["description"], table["instructions"], dict(table["code_class"]),
                                        table["traffic"], int(table.get("pixel_block", 1)),
                                        dict(table.get("blocked_variants", {})),
                                        float(table.get("per_layer_instructions", 0.0)),
                                        float(table.get("per_inference_instructions", 0.0)), classes)
    return profiles


def runtime_profile(name: str) -> RuntimeProfile:
    profiles = runtime_profiles()
    if name not in profiles:
        raise UsageError(f"--runtime {name!r}: unknown runtime profile; choose one of {', '.join(profiles)}")
    return profiles[name]
