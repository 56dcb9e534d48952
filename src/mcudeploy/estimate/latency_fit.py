"""The board-latency model and its regularised fit: what ``estimate --calibrate`` and the
shipped defaults (``data/calibration.toml``, made by ``tools/fit_latency_defaults.py``) fit.

Input: measurements (:class:`Measurement`): a model on a board at a clock with a runtime label,
its measured latency, and the prior estimate's parts of it (the ``cmsis-nn`` or ``mcudeploy``
profile with the Arm-derived CPI of ``data/cores.toml``, no calibration):

    C_g     CPU cycles of the layers of kernel class g (convolution, pointwise, depthwise,
            fully_connected; ``data/runtimes.toml``), from the per-layer instruction model
            (shapes, channel counts, kernel, stride: ``features.py``) x prior CPI
    R       the cycles of every other layer and the runtime's per-inference work
    B       bytes of the CPU layers' constant operands (weights, biases) in internal flash, x
            clock / the target's clock (a flash wait is a time: fewer cycles on a slower core)
    M       wait cycles the memory model predicts (not scaled), N: NPU time

    t = ( k_core s_label (sum_g t_fw,g C_g + R) + f B + M ) / clock + N

``k_core``: one factor per core family on its CPI (the fitted CPI is ``prior x k``);
``s_label``: one per runtime label (a library version: ``x-cube-ai 10.2``; a library nobody
measured gets the geometric mean over the rows, :attr:`FittedModel.generic_scale`: the calibrated
``cmsis-nn`` profile); ``t_fw,g``: one per
framework (all versions of ``x-cube-ai``) and kernel class; ``f``: flash cycles per weight byte
that the memory model's prefetch does not hide (one constant: streaming weights, each read once
by a fully connected layer, costs what the flash interface does not overlap).

Fit: Gauss-Newton on log residuals (spread :data:`RESIDUAL_SPREAD`) with a Gaussian prior on
every log parameter (ridge toward a physically meaningful value): ``k`` toward 1 (Arm's figures)
with :data:`PRIOR_SPREAD` ``core``; ``s`` toward 1 (the library runs CMSIS-NN-class code) with
``label``; ``t`` toward 1 tightly (``class``: with four models, 1x1 and depthwise layers always
appear in the same ratio, so unregularised class factors land on absurd values); ``f`` toward
:data:`FLASH_PRIOR_CYCLES_PER_BYTE`. Few parameters, each set by many rows. A user's calibration
centres the priors on the shipped fit instead (``fit(rows, start=...)``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DataError

PRIOR_SPREAD = {"core": 0.3, "label": 1.0, "class": 0.05, "flash": 0.5}
FLASH_PRIOR_CYCLES_PER_BYTE = 1.0     # a 5-wait-state flash line of 8 bytes, half hidden by prefetch
RESIDUAL_SPREAD = 0.1
REST = ""                             # the component key of R


@dataclass
class Measurement:
    """One measured latency and the prior estimate's parts of it (module docstring)."""
    line: int
    model: Path
    board: str                       # the board (a built-in target name or the CSV's board name)
    target: str                      # the target the estimate ran on (the board, or a proxy of its core)
    clock_hz: float
    label: str                       # runtime label: a library and version
    profile: str                     # runtime profile of the prior estimate (cmsis-nn, mcudeploy)
    measured_ms: float
    family: str = ""                 # core family (data/cores.toml)
    parts: dict[str, float] = field(default_factory=dict)     # C_g by class, R under REST
    flash_bytes: float = 0.0         # B
    waits: float = 0.0               # M
    npu_us: float = 0.0              # N
    predicted_ms: float = 0.0

    @property
    def framework(self) -> str:
        from .overlay import framework_of
        return framework_of(self.label)


@dataclass
class FittedModel:
    """The fitted factors (module docstring); 1 for what the data did not set."""
    cores: dict[str, float]
    labels: dict[str, float]
    classes: dict[tuple[str, str], float]
    flash_cycles_per_byte: float
    generic_scale: float = 1.0       # a CMSIS-NN-class library nobody measured: the rows' geometric mean

    def label_scale(self, row: Measurement) -> float:
        """The row's label; an unseen version: the geometric mean of its framework's fitted
        versions; an unseen library: :attr:`generic_scale` (the calibrated ``cmsis-nn`` profile)."""
        if row.label in self.labels:
            return self.labels[row.label]
        from .overlay import framework_of
        same = [math.log(v) for label, v in self.labels.items() if framework_of(label) == row.framework]
        return math.exp(sum(same) / len(same)) if same else self.generic_scale

    def cpu_cycles(self, row: Measurement) -> float:
        scaled = sum(cycles * (self.classes.get((row.framework, group), 1.0) if group else 1.0)
                     for group, cycles in row.parts.items())
        return scaled * self.cores.get(row.family, 1.0) * self.label_scale(row)

    def predict(self, row: Measurement) -> float:
        cycles = self.cpu_cycles(row) + self.flash_cycles_per_byte * row.flash_bytes + row.waits
        return cycles / row.clock_hz * 1e3 + row.npu_us / 1e3


def _parameters(rows: list[Measurement]) -> list[tuple]:
    names: set[tuple] = {("flash",)}
    for row in rows:
        names |= {("core", row.family), ("label", row.label)}
        names |= {("class", row.framework, group) for group, cycles in row.parts.items() if group and cycles > 0}
    return sorted(names, key=str)


def _model(theta: np.ndarray, names: list[tuple]) -> FittedModel:
    values = dict(zip(names, np.exp(theta).tolist()))
    return FittedModel({n[1]: v for n, v in values.items() if n[0] == "core"},
                       {n[1]: v for n, v in values.items() if n[0] == "label"},
                       {(n[1], n[2]): v for n, v in values.items() if n[0] == "class"},
                       values[("flash",)] * FLASH_PRIOR_CYCLES_PER_BYTE)


def _gradient(row: Measurement, model: FittedModel, index: dict[tuple, int], size: int) -> tuple[float, np.ndarray]:
    """Predicted cycles and d cycles / d log parameter for one row."""
    gradient = np.zeros(size)
    cpu = model.cpu_cycles(row)
    gradient[index["core", row.family]] += cpu
    gradient[index["label", row.label]] += cpu
    common = model.cores.get(row.family, 1.0) * model.label_scale(row)
    for group, cycles in row.parts.items():
        if group and cycles > 0:
            gradient[index["class", row.framework, group]] += cycles * model.classes[(row.framework, group)] * common
    flash = model.flash_cycles_per_byte * row.flash_bytes
    gradient[index["flash",]] += flash
    return cpu + flash + row.waits, gradient


def _centre(name: tuple, start: FittedModel | None) -> float:
    """The log value a parameter is pulled toward: 0 (the priors) or ``start``'s fitted value."""
    if start is None:
        return 0.0
    value = {"core": lambda: start.cores.get(name[1]), "label": lambda: start.labels.get(name[1]),
             "class": lambda: start.classes.get((name[1], name[2])),
             "flash": lambda: start.flash_cycles_per_byte / FLASH_PRIOR_CYCLES_PER_BYTE}[name[0]]()
    return math.log(value) if value else 0.0


def fit(rows: list[Measurement], iterations: int = 60, start: FittedModel | None = None) -> FittedModel:
    """The regularised fit of the module docstring; ``start`` (a user's calibration: the shipped
    defaults) moves the centre of every prior to its fitted value, so few rows refine the public
    fit instead of starting again from Arm's figures."""
    if not rows:
        raise DataError("the latency fit needs measurements; got none")
    names = _parameters(rows)
    index = {name: i for i, name in enumerate(names)}
    prior = np.array([1.0 / PRIOR_SPREAD[name[0]] for name in names])
    centre = np.array([_centre(name, start) for name in names])
    theta = centre.copy()
    measured = np.log([row.measured_ms for row in rows])
    for _ in range(iterations):
        model = _model(theta, names)
        parts = [_gradient(row, model, index, len(names)) for row in rows]
        npu_ms = np.array([row.npu_us / 1e3 for row in rows])
        clock_ms = np.array([row.clock_hz / 1e3 for row in rows])
        predicted = np.array([cycles for cycles, _ in parts]) / clock_ms + npu_ms
        jacobian = np.array([g for _, g in parts]) / clock_ms[:, None] / predicted[:, None]
        residual = (np.log(predicted) - measured) / RESIDUAL_SPREAD
        system = np.vstack([jacobian / RESIDUAL_SPREAD, np.diag(prior)])
        step, *_ = np.linalg.lstsq(system, -np.concatenate([residual, prior * (theta - centre)]), rcond=None)
        theta += step
        if np.max(np.abs(step)) < 1e-9:
            break
    model = _model(theta, names)
    model.generic_scale = math.exp(float(np.mean([math.log(model.labels[row.label]) for row in rows])))
    return model


def parameter_count(rows: list[Measurement]) -> int:
    return len(_parameters(rows))
