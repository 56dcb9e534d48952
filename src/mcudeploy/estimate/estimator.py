"""The estimate stage: a :class:`~mcudeploy.deployment.Deployment` -> an :class:`~.records.Estimate`.

    estimate(deployment, runtime="mcudeploy", core_clock_hz=None, npu_clock_hz=None, overlay=None)

Walks the plan's order: runs of NPU nodes (of ``deployment.mapping``, the generated code's
devices for the deployment's executor: none under ``mcudeploy``, mcudeploy's CPU code; the
record names the executor) become hardware epochs (:mod:`.npu`), every other
node is a CPU layer on the target's core (:mod:`.cpu`: the runtime profile's instruction
model, the core's CPI, the wait states of the regions the plan put its operands in). Adds
the runtime's per-inference overhead (``network_run``'s checks and input / output copies,
measured; an NPU run's software control, ``[npu] run_overhead_us``). Nodes the plan made no-ops
(a concatenation written in place) cost nothing.

``runtime``: a profile of ``data/runtimes.toml`` or a runtime label of the overlay (a
calibrated profile: a library version such as ``x-cube-ai 10.2``). The overlay is the shipped
defaults (``data/calibration.toml``: constants fitted on every public board measurement,
:mod:`.latency_fit`) with the user's ``overlay`` laid over them; ``defaults=False`` leaves the
shipped defaults out (the Arm-derived priors a calibration fits against). The estimate carries
the label's cross-validated error (``Estimate.expected_error``). ``core_clock_hz`` /
``npu_clock_hz`` replace the target's clocks (boards often run below the maximum): cycles stay,
wait states of slow memories scale with the clock.

Bad input is an error, never a silent zero: no target, a non-positive clock, NPU nodes on a
target whose ``[npu]`` lacks the figures the NPU model needs (all missing keys named). A region
without speed figures makes only the layers that touch it unknown (``Estimate.complete``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..reference.int_kernels.conv import ConvParams
from ..reference.int_kernels.matmul import FullyConnectedParams
from ..reference.int_kernels.softmax import SoftmaxParams
from ..targets import MemoryRegion, Target, TargetError
from .cpu import cpu_layer_cost
from .features import softmax_pass
from .instructions import overhead as measured_overhead
from .kernel_loops import requant_context
from .kernel_map import is_depthwise
from .npu import group_epochs, missing_npu_figures, npu_epoch_cost
from .overlay import Overlay, check_core, load_overlay, shipped_overlay
from .profiles import CoreModel, RuntimeProfile, core_model, runtime_profile, runtime_profiles
from .records import Estimate, LayerCost
from .traffic import copy_in_place

if TYPE_CHECKING:
    from ..deployment import Deployment
    from ..plan.memory_plan import PlacedMemoryPlan

ON_CHIP_NPU_SCALES = ("sram",)     # region kinds clocked with the NPU (bytes per cycle kept)


@dataclass
class Setting:
    """Everything the layer models read, resolved once per estimate."""
    target: Target
    plan: PlacedMemoryPlan
    variants: dict[str, str]
    core_model: CoreModel
    profile: RuntimeProfile
    core_clock_hz: float
    target_clock_hz: float
    npu_clock_hz: float | None
    regions: dict[str, MemoryRegion] = field(default_factory=dict)
    epoch_controller: bool = True
    flash_cycles_per_byte: float = 0.0    # calibrated weight-streaming cost (0 uncalibrated)

    @property
    def scale(self) -> float:
        return self.profile.scale

    @property
    def dcache_bytes(self) -> int:
        return self.target.core.dcache_bytes

    def region_of(self, value) -> str:
        if value.is_constant:
            return self.plan.weights.get(value.name, "")
        placement = self.plan.tensors.get(value.name)
        if placement is not None:
            return placement.region
        return self.plan.placement.home_region

    def npu_bytes_per_cycle(self, name: str) -> float:
        region = self.regions.get(name)
        if region is None:
            return math.inf
        assert self.target.npu is not None and self.npu_clock_hz is not None  # asked for NPU targets only
        if region.byte_width and region.freq_ratio:
            per_cycle = region.byte_width / region.freq_ratio
            return per_cycle if region.kind in ON_CHIP_NPU_SCALES else per_cycle * self.target.npu.clock_hz / self.npu_clock_hz
        if region.bandwidth <= 0:
            return 0.0
        clock = self.target.npu.clock_hz if region.kind in ON_CHIP_NPU_SCALES else self.npu_clock_hz
        return region.bandwidth / clock

    def work_region(self, size: int, what: str) -> tuple[str, str]:
        """The on-chip NPU region that holds an epoch's work buffer, or the largest external one
        and the predicted failure."""
        usable = [r for r in self.target.regions if r.writable and r.npu_access and r.holds_data]
        on_chip = [r for r in usable if r.on_chip and r.size >= size]
        if on_chip:
            return max(on_chip, key=lambda r: (self.npu_bytes_per_cycle(r.name), r.size)).name, ""
        largest = max((r for r in usable if r.on_chip), key=lambda r: r.size, default=None)
        external = max((r for r in usable if not r.on_chip), key=lambda r: r.size, default=None)
        failure = (f"{what} need {size / 1024:.0f} KiB, more than any on-chip memory the NPU reaches "
                   f"(largest {largest.name}, {largest.size / 1024:.0f} KiB)" if largest else f"{what} need {size} bytes")
        return (external.name if external else (largest.name if largest else "")), failure


def _check(deployment: Deployment, core_clock_hz, npu_clock_hz) -> None:
    if deployment.target is None:
        raise UsageError(f"{deployment.name}: the estimate needs a target (--target NAME or a .toml file)")
    for option, value in (("--core-clock", core_clock_hz), ("--npu-clock", npu_clock_hz)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise UsageError(f"{option} {value!r}: a clock must be a positive number of Hz, e.g. 80e6")
    target = deployment.target
    if not target.core.clock_hz > 0:
        raise TargetError(f"{target.source}: [core] clock_mhz is missing or zero; the estimate needs the clock")


def _uses_npu(deployment: Deployment) -> bool:
    return deployment.mapping is not None and any(p.device == "npu" for p in deployment.mapping.placements)


def _resolve_runtime(runtime: str, overlay: Overlay | None) -> RuntimeProfile:
    if overlay is not None:
        labelled = overlay.runtime(runtime)
        if labelled is not None:
            return labelled
        if runtime not in runtime_profiles():
            versions = ", ".join(repr(name) for name in sorted(overlay.runtimes) if name not in runtime_profiles())
            raise UsageError(f"--runtime {runtime!r}: unknown runtime; choose a profile ({', '.join(runtime_profiles())}) "
                             f"or a calibrated library version ({versions})")
    return runtime_profile(runtime)


def check_runtime(runtime: str, overlay: Overlay | str | Path | None = None) -> None:
    """Refuse an unknown ``--runtime`` before any work (the shipped labels and the overlay's count)."""
    if overlay is not None and not isinstance(overlay, Overlay):
        overlay = load_overlay(overlay)
    shipped = shipped_overlay()
    merged = overlay.merged_over(shipped) if overlay is not None and shipped is not None else (overlay or shipped)
    _resolve_runtime(runtime, merged)


def make_setting(deployment: Deployment, runtime: str, core_clock_hz, npu_clock_hz, overlay: Overlay | None) -> Setting:
    target = deployment.require_target("the estimate")
    model = core_model(target.core, target.source)
    if overlay is not None:
        model = overlay.apply_core(model)
    npu_clock = None
    if target.npu is not None:
        npu_clock = npu_clock_hz or target.npu.clock_hz
    variants = {name: choice.variant for name, choice in deployment.kernels.choices.items()}
    return Setting(target, deployment.plan, variants, model, _resolve_runtime(runtime, overlay),
                   core_clock_hz or target.core.clock_hz, target.core.clock_hz, npu_clock,
                   {r.name: r for r in target.regions}, bool(target.npu and target.npu.epoch_controller),
                   overlay.flash_cycles_per_byte if overlay is not None else 0.0)


def _overlay_for(deployment: Deployment, overlay: Overlay | str | Path | None, defaults: bool) -> Overlay | None:
    """The user's overlay laid over the shipped defaults (``defaults=False``: the user's alone, or
    none: the Arm-derived priors, which is what a calibration fits against)."""
    if overlay is not None and not isinstance(overlay, Overlay):
        overlay = load_overlay(overlay)
    if overlay is not None:
        target = deployment.require_target("the estimate")
        check_core(overlay, core_model(target.core, target.source).family, target.name)
    shipped = shipped_overlay() if defaults else None
    if shipped is None:
        return overlay
    return shipped if overlay is None else overlay.merged_over(shipped)


def expected_error(overlay: Overlay | None, setting: Setting) -> tuple[str, float | None]:
    """The cross-validated error of the label the estimate used, in words, and the band printed
    beside the figure (:func:`_band`; None uncalibrated or not cross-validated)."""
    if overlay is None:
        return "uncalibrated (Arm-derived CPI, no board measurement applied)", None
    label = setting.profile.label or setting.profile.name
    family = setting.core_model.family
    if family not in overlay.cpi:
        return (f"not cross-validated: no board with a {family} was measured, its CPI is Arm's prior "
                "(data/cores.toml)"), None
    errors = overlay.errors.get(label)
    if errors:
        parts = [f"+-{errors[key]:.0%} median (worst {errors.get(key + '_worst', 0):.0%}) {key.replace('_', '-')}"
                 if key in errors else f"{key.replace('_', '-')}: not measurable (one {what} only)"
                 for key, what in (("leave_one_board_out", "board"), ("leave_one_model_out", "model"))]
        return ", ".join(parts) + f", runtime {label}", _band(errors)
    if label in overlay.runtimes:
        return f"runtime {label} calibrated by {overlay.source}, not cross-validated (its header has the fit error)", None
    generic, unnamed = overlay.errors.get("*"), overlay.errors.get(UNMEASURED_LIBRARY)
    if generic is None:
        return f"not cross-validated for runtime {label}", None
    text = (f"runtime {label} was measured on no board: the {family} CPI is calibrated, the libraries' "
            f"cross-validated median is +-{generic['leave_one_board_out']:.0%} leave-one-board-out, "
            f"+-{generic['leave_one_model_out']:.0%} leave-one-model-out")
    if unnamed is None:
        return text, _band(generic)
    # the band: a library the fit never saw (its speed unknown), as every row predicted with no
    # library label is - the labelled libraries' own medians assume a measured library
    return text + f"; predicted as a library no board measured: +-{_band(unnamed):.0%}", _band(unnamed)


UNMEASURED_LIBRARY = "cmsis-nn"     # calibration.toml: every row predicted as an unnamed library of the class


def _band(errors: dict[str, float]) -> float:
    """The band printed beside the figure: the larger of the two cross-validated medians (a new
    model on a new board is both kinds of unseen)."""
    return max(errors.get("leave_one_board_out", 0.0), errors.get("leave_one_model_out", 0.0))


def kernel_context(deployment: Deployment, node) -> dict:
    """Deployment facts the features need: the output written where the input is (no copy),
    a softmax's share of computed exponentials (from its prepared ``diff_min``; an int16
    softmax has none: its tables cover every input). ``params`` is empty for a float
    deployment."""
    context: dict = {"in_place": copy_in_place(node, deployment.plan)}
    params = deployment.params.get(node.name)
    if node.op == "Softmax" and isinstance(params, SoftmaxParams):
        context["softmax_pass"] = softmax_pass(int(params.diff_min))
    context.update(requant_facts(node, params))
    return context


def requant_facts(node, params: ConvParams | FullyConnectedParams | object | None) -> dict:
    """The optimised variants' requantization paths of a Conv / Gemm from its prepared
    parameters (:func:`.kernel_loops.requant_context`); ``{}`` for other nodes and for a
    float deployment (no prepared parameters)."""
    if node.op not in ("Conv", "Gemm", "MatMul") or not isinstance(params, (ConvParams, FullyConnectedParams)):
        return {}
    weights = node.inputs[1]
    bias = node.inputs[2].const if len(node.inputs) > 2 and node.inputs[2] is not None else None
    grouped = node.op == "Conv" and is_depthwise(node)
    depth = math.prod(weights.shape[1:3]) if grouped else \
        (math.prod(weights.shape[1:]) if node.op == "Conv" else node.inputs[0].shape[-1])
    facts = requant_context(params.output_shift, params.output_multiplier, bias, depth, grouped)
    if isinstance(params, ConvParams):   # the Helium pair loop skips its fix-up under such a clamp
        facts["clamped_low"] = bool(params.activation_min >= params.output_offset)
    return facts


def _layers(deployment: Deployment, setting: Setting) -> list[LayerCost]:
    nodes = {node.name: node for node in deployment.graph.nodes}
    elided = set(deployment.plan.elided_nodes)
    on_npu = {p.node for p in deployment.mapping.placements if p.device == "npu"} if deployment.mapping else set()
    layers: list[LayerCost] = []
    run: list = []
    epoch_index = 0

    def flush() -> None:
        nonlocal epoch_index
        for epoch in group_epochs(run):
            layers.extend(npu_epoch_cost(epoch, epoch_index, setting))
            epoch_index += 1
        run.clear()

    for name in deployment.plan.order:
        node = nodes[name]
        if name in on_npu and name not in elided:
            run.append(node)
            continue
        flush()
        if name in elided:
            layers.append(LayerCost(name, node.op, "cpu", "elided", 0, bound="overhead", clock_hz=setting.core_clock_hz,
                                    notes=["no kernel call: the plan wrote it in place"],
                                    cause=f"layer {name} costs nothing: the plan wrote it in place"))
        else:
            layers.append(cpu_layer_cost(node, setting, kernel_context(deployment, node)))
    flush()
    return layers


def _overhead(deployment: Deployment, setting: Setting, layers: list[LayerCost]) -> tuple[float, float]:
    """Per-inference work outside the layers (module docstring): (microseconds, CPU instructions)."""
    graph = deployment.graph
    model, profile = setting.core_model, setting.profile
    code_class = "scalar"
    per_instruction = model.instruction_factor[code_class] * model.cpi[code_class]
    measured = measured_overhead(profile.instructions, model.build)
    cpu_layers = sum(1 for layer in layers if layer.device == "cpu" and layer.kernel != "elided")
    # network_run copies the inputs / outputs only when they live in the arena (io_in_arena)
    io = [*graph.inputs, *graph.outputs] if deployment.options.io_in_arena else []
    if measured is not None:
        instructions = (measured.get("per_inference", 0.0) + measured.get("per_layer", 0.0) * cpu_layers
                        + measured.get("per_io_tensor", 0.0) * len(io)
                        + measured.get("per_io_byte", 0.0) * sum(v.nbytes for v in io))
    else:
        instructions = profile.per_inference_instructions
    instructions = max(0.0, instructions)
    total = instructions * per_instruction * setting.scale / setting.core_clock_hz * 1e6
    if any(layer.device == "npu" for layer in layers):
        assert setting.target.npu is not None  # NPU layers exist on NPU targets only
        total += setting.target.npu.run_overhead_us
    return total, instructions


def estimate(deployment: Deployment, runtime: str = "mcudeploy", core_clock_hz: float | None = None,
             npu_clock_hz: float | None = None, overlay: Overlay | str | Path | None = None,
             defaults: bool = True) -> Estimate:
    """The latency, traffic and bandwidth estimate of ``deployment`` (module docstring)."""
    _check(deployment, core_clock_hz, npu_clock_hz)
    overlay = _overlay_for(deployment, overlay, defaults)
    target = deployment.require_target("the estimate")
    if _uses_npu(deployment) and target.npu is not None:   # nodes on the NPU: the target has one
        missing = missing_npu_figures(target.npu)
        if missing:
            raise TargetError(f"{target.source}: the NPU estimate needs {', '.join(missing)} "
                              f"(target {target.name!r}); add them to the target file (docs/targets.md)")
    setting = make_setting(deployment, runtime, core_clock_hz, npu_clock_hz, overlay)
    layers = _layers(deployment, setting)
    power = {"cpu": target.core.active_power_mw}
    if target.npu is not None:
        power["npu"] = target.npu.active_power_mw
    notes = []
    if deployment.precision != "integer":
        notes.append(f"precision {deployment.precision}: mcudeploy generates code for full-integer models only; "
                     "the figures are those of the int8 kernels")
    overhead_us, overhead_instructions = _overhead(deployment, setting, layers)
    band, median = expected_error(overlay, setting) if not _uses_npu(deployment) else \
        ("NPU epochs: see benchmarks/results/estimate.md section 3 (STM32N6 single layers)", None)
    return Estimate(deployment.name, target.name, setting.profile.label or setting.profile.name, setting.core_clock_hz,
                    setting.npu_clock_hz, layers, overhead_us, overhead_instructions,
                    overlay.source if overlay is not None else None, notes, power, band, median,
                    deployment.executor)
