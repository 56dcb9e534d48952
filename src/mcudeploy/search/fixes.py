"""What-if fixes when no configuration passes: each one a change of the configuration or of the
model, VERIFIED by running the pipeline on it, with its price and the line that applies it.

Input: the finished exploration (the least failing trial ``C``, the target, the model).
Output: :class:`~.records.Fix` es, cheapest first. Each fix runs trials (phase ``fix`` in the
log). A fix targets reason codes; ``verified`` means its trial has none of them left,
``passes`` that it PASSes outright. When no single fix passes, the verified ones of different
kinds are applied together in one more trial (``combined``).

==============  ==================================================  =========================
fix             what is tried                                        price
==============  ==================================================  =========================
sram_limit      bisection of ``sram_limit`` above the user's limit   bytes more than the limit
reserve         bisection of ``reserve`` below the user's reserve    bytes less for the app
psram           ``C`` + external_activations (+ split_arena)         latency vs on chip, tensors
                                                                     and bytes moved off chip
tiling          ``C`` + ``[tiling] auto`` (+ split_arena)            MACC of the halos, latency
split           ``C`` + ``[split] auto`` (crossing tensors off chip)  bytes exchanged, latency
int8_io         ``C`` on the model with integer inputs / outputs    re-quantizing (the exact
                (:func:`.integer_io.integer_io`: the float edge      command); the application
                conversions removed, exact)                          converts at the edge
alignment       channels padded with zeros to the NPU alignment      MACC added, latency;
                (:func:`.rewrites.pad_channels`, exact: checked on   equivalence checked
                random inputs)
skip_conv       a 1x1 conv halving each long-lived skip              needs retraining
                (:func:`.rewrites.reduce_skips`)
resolution      bisection of the input size on multiples of the      pixels, MACC, latency;
                model's down-sampling (:func:`.reshape.rebuild`),    accuracy must be measured
                on chip and, when the pipeline tiles, with tiling;
                refused (and said) when a fixed-size head forbids it
==============  ==================================================  =========================

Rank = the class order above (configuration before model change before retraining or a
smaller input) + the relative latency cost; a fix that is not verified ranks after all that are.
"""
from __future__ import annotations

import logging
import math
from fractions import Fraction
from typing import Callable

import numpy as np

from ..driver import deployable_graph
from ..errors import McuDeployError
from ..ir import Graph, precision
from ..options import OPTION_SPECS
from ..reference import run_float, run_int
from .critical import boundary
from .integer_io import integer_io
from .reasons import ALIGNMENT, FLASH_NOFIT, RAM_NOFIT, exact, kib
from .records import Fix
from .reshape import rebuild, spatial_input
from .rewrites import pad_channels, reduce_skips
from .space import describe_value, normalise, options_for, pipeline_has
from .strategy import least_failing
from .trial import evaluate

logger = logging.getLogger(__name__)
CLASS_RANK = {"search": 0, "sram_limit": 1, "reserve": 1, "int8_io": 2, "psram": 2, "tiling": 3, "split": 3, "alignment": 4,
              "skip_conv": 5, "resolution": 6, "combined": 7}
MEMORY = (RAM_NOFIT, FLASH_NOFIT)
EQUIVALENCE_SAMPLES = 2
EQUIVALENCE_SIZE = 32


def _latency_ms(trial) -> float | None:
    value = trial.metrics.latency_us if trial is not None and trial.metrics is not None else None
    return None if value is None else round(value / 1000.0, 3)


def _gone(trial, codes) -> bool:
    return not any(r.code in codes for r in trial.reasons)


def _left(trial) -> list[str]:
    return [f"still fails: {r.code}: {r.message}" for r in trial.reasons[:2]]


def _rank(fix: Fix, reference) -> float:
    base = CLASS_RANK[fix.kind] + (0 if fix.verified else 10) - (0.5 if fix.passes else 0)
    latency, before = fix.price.get("latency_ms"), _latency_ms(reference)
    if isinstance(latency, (int, float)) and before:
        base += max(0.0, latency / before - 1.0) / 10.0
    return round(base, 4)


class Fixer:
    """Runs the fixes of the module docstring for one finished search."""

    def __init__(self, search, space) -> None:
        self.search, self.space = search, space
        self.reference = least_failing(search.trials) or search.trials[0]
        self.config = dict(self.reference.config)
        self.graph = search.graph if search.graph is not None else search.runner_graph()
        self.tiling = len(space.values.get("tiling_auto", ())) > 1 or search.base.tiling_auto
        self.rewritten: Graph | None = None          # the padded graph, when the alignment fix made one
        self.resizable = False         # the untiled resolution fix got as far as trying sizes

    def run_config(self, changes: dict, label: str, graph=None):
        config = normalise({**self.config, **changes})
        if graph is None:
            return self.search.run_one(config, "fix", label)
        _, trial = evaluate(graph, self.search.target, options_for(self.search.base, config),
                            self.search.request.constraints, config)
        return self.search._record(trial, "fix", label)

    # -- configuration fixes ----------------------------------------------------------
    def sram_limit(self) -> Fix | None:
        limit = self.search.base.sram_limit
        largest = max((r.size for r in self.search.target.regions if r.on_chip and r.writable), default=0)
        if limit is None or limit >= largest:
            return None
        found = boundary(range(limit, largest + 1), lambda value: self.run_config(
            {"sram_limit": value}, f"sram_limit={value}"), lambda t: _gone(t, MEMORY))
        if not found.found:
            return Fix("sram_limit", f"raising sram_limit up to the largest region ({exact(largest)}) does not help",
                       False, {"limit": limit})
        return Fix("sram_limit", f"raise sram_limit from {exact(limit)} to {exact(found.passing)} (critical: "
                   f"{exact(found.failing)} fails)", True,
                   {"extra_bytes": found.passing - limit, "latency_ms": _latency_ms(found.passing_trial)},
                   [f"--sram-limit {found.passing}", f"[memory] sram_limit = {found.passing}"],
                   trial=found.passing_trial.index, passes=found.passing_trial.passed,
                   changes={"sram_limit": found.passing})

    def reserve(self) -> Fix | None:
        reserve = self.search.base.reserve
        if reserve <= 0:
            return None
        found = boundary(range(reserve, -1, -1), lambda value: self.run_config(
            {"reserve": value}, f"reserve={value}"), lambda t: _gone(t, MEMORY))
        if not found.found:
            return Fix("reserve", "no reserve, not even 0, makes it fit", False, {"reserve": reserve})
        return Fix("reserve", f"lower the application reserve from {exact(reserve)} to {exact(found.passing)}", True,
                   {"bytes_given_up": reserve - found.passing, "latency_ms": _latency_ms(found.passing_trial)},
                   [f"--reserve {found.passing}", f"[memory] reserve = {found.passing}"],
                   trial=found.passing_trial.index, passes=found.passing_trial.passed,
                   changes={"reserve": found.passing})

    def psram(self) -> Fix | None:
        external = [r for r in self.search.target.regions if r.writable and r.holds_data and not r.on_chip]
        if not external or self.config.get("external_activations"):
            return None
        # from the defaults (trial 0): the least failing trial is tuned for on-chip bytes, not for PSRAM
        first = self.search.trials[0].config
        variants = [{**first, "external_activations": True, "split_arena": True, "activation_region": None},
                    {**first, "external_activations": True, "split_arena": False, "activation_region": None}]
        tried = [self.run_config(changes, "psram + split arena" if changes["split_arena"] else "psram, whole arena")
                 for changes in variants]
        if self.config.get("tiling_auto") and not any(_gone(t, MEMORY) for t in tried):
            variants.append({**self.config, **variants[0], "tiling_auto": True,
                             "tiling_max_overhead": self.config.get("tiling_max_overhead")})
            tried.append(self.run_config(variants[-1], "psram + split arena + tiling"))
        good = [(t, c) for t, c in zip(tried, variants) if _gone(t, MEMORY)]
        if not good:
            return Fix("psram", f"activations in {external[0].name} still do not fit: "
                       + "; ".join(r.message for r in tried[0].reasons[:2]), False, trial=tried[0].index)
        best, changes = min(good, key=lambda item: (item[0].metrics.latency_us or math.inf, item[0].index))
        before, after = _latency_ms(self.reference), _latency_ms(best)
        moved = best.metrics.off_chip_tensors
        price = {"latency_ms": after, "latency_if_it_fit_on_chip_ms": before,
                 "latency_cost_ms": None if after is None or before is None else round(after - before, 3),
                 "external_bytes": best.metrics.external_bytes, "on_chip_bytes": best.metrics.on_chip_bytes,
                 "tensors_off_chip": best.metrics.off_chip_count}
        details = [f"off chip: {name} ({kib(size)})" for name, size in moved[:6]] + ([] if best.passed else _left(best))
        apply = ["[memory] external_activations = true   (and drop --on-chip-only)"]
        apply += ["[memory] split_arena = true"] if changes["split_arena"] else []
        apply += ["[tiling] auto = true"] if changes.get("tiling_auto") else []
        what = (f"the {best.metrics.off_chip_count} largest activation tensors" if best.metrics.banks
                else "the whole arena") + \
            (" of the tiled model" if changes.get("tiling_auto") else "")
        return Fix("psram", f"put {what} in external RAM ({external[0].name}), the rest on chip", True, price, apply,
                   details, trial=best.index, passes=best.passed, changes=changes)

    def stage(self, kind: str, field: str, section: str) -> Fix | None:
        external = any(r.writable and r.holds_data and not r.on_chip for r in self.search.target.regions)
        if not pipeline_has(section) or field in self.space.locked or (kind == "split" and not external):
            return None
        changes = {field: True, "split_arena": True} if kind == "tiling" else {field: True}
        already = bool(self.config.get(field))       # the least failing trial has it: report, do not rerun
        trial = self.reference if already else self.run_config(changes, f"{section} auto")
        extra = trial.metrics.extra if trial.metrics else {}
        price = {"latency_ms": _latency_ms(trial), "latency_before_ms": _latency_ms(self.reference),
                 "macc_overhead_percent": extra.get("tiling_macc_overhead_percent"),
                 "external_arena_bytes": extra.get("split_external_bytes"),
                 "bytes_exchanged": extra.get("split_bytes_exchanged")}
        details = [f"{key}: {value}" for key, value in sorted(extra.items())
                   if key.startswith(kind) and key not in ("tiling_macc_overhead_percent", "split_bytes_exchanged")]
        key = OPTION_SPECS[field].key
        apply = [f"[{section}] {key} = true"] + (["[memory] split_arena = true"] if "split_arena" in changes else [])
        if "pinned_split_points" in extra or "pinned_tiling_regions" in extra:
            apply.append("(or, as found: " + _pinned_lines(extra) + ")")
        title = (f"{section} {key} (trial {trial.index}, found by the search)" if already else
                 f"{section}: let the pipeline choose ([{section}] {key})")
        return Fix(kind, title, _gone(trial, MEMORY),
                   {k: v for k, v in price.items() if v is not None}, apply,
                   details + ([] if trial.passed else _left(trial)), trial=trial.index, passes=trial.passed,
                   changes=changes)

    def split(self) -> Fix | None:
        """The graph split: cut at the levels and tile each one (``[split] levels``), else spill
        the long-lived tensors (``[split] auto``); the first that removes the memory reasons."""
        levels = self.stage("split", "split_levels", "split") if self.tiling else None
        if levels is not None and levels.verified:
            return levels
        return self.stage("split", "split_auto", "split") or levels

    # -- model changes ----------------------------------------------------------------
    def int8_io(self) -> Fix | None:
        """The least failing configuration on the model with integer I/O (module docstring)."""
        rewrite = integer_io(deployable_graph(self.graph.copy()))
        if rewrite is None:
            return None
        trial = self.run_config({}, "int8 inputs / outputs", rewrite.graph)
        before, after = self.reference.metrics, trial.metrics
        price = {"on_chip_bytes_before": before.on_chip_bytes if before else None,
                 "on_chip_bytes": after.on_chip_bytes if after else None,
                 "latency_ms": _latency_ms(trial), "latency_before_ms": _latency_ms(self.reference),
                 "accuracy": "unchanged (the same integer layers; the application quantizes the input)"}
        apply = ["mcudeploy quantize FLOAT_MODEL --calib DATA --int8-io -o MODEL_int8io.onnx   (re-quantize with "
                 "int8 inputs / outputs; the same calibration data gives the same layers)"]
        changed = [f"{k} = {describe_value(v)}" for k, v in sorted(self.config.items())
                   if self.search.trials[0].config.get(k) != v]
        apply += [f"with the options of trial {self.reference.index}: {', '.join(changed)}"] if changed else []
        return Fix("int8_io", "int8 model inputs and outputs instead of float (the float buffers and the edge "
                   "conversions go)", _gone(trial, MEMORY), {k: v for k, v in price.items() if v is not None},
                   apply, [*rewrite.changes, *([] if trial.passed else _left(trial))], trial=trial.index,
                   passes=trial.passed)

    def alignment(self) -> Fix | None:
        reasons = [r for r in self.reference.reasons if r.code == ALIGNMENT]
        npu = self.search.target.npu
        if not reasons or npu is None:
            return None
        deployed = deployable_graph(self.graph.copy())
        try:
            rewrite = pad_channels(deployed, npu.channel_alignment)
        except McuDeployError as err:
            return Fix("alignment", f"channel padding is not possible: {err}", False)
        self.rewritten = rewrite.graph
        trial = self.run_config({}, f"channels padded to {npu.channel_alignment}", rewrite.graph)
        left = [r for r in trial.reasons if r.code == ALIGNMENT]
        price = {"macc_before": rewrite.macc_before, "macc_after": rewrite.macc_after,
                 "macc_cost_percent": round(100.0 * (rewrite.macc_after / rewrite.macc_before - 1), 2),
                 "latency_ms": _latency_ms(trial), "latency_before_ms": _latency_ms(self.reference),
                 "equivalence": _equivalent(deployed, rewrite.graph)}
        details = [f"{len(reasons)} ALIGNMENT reason(s) before, {len(left)} after"] + \
            ([] if trial.passed else _left(trial))
        return Fix("alignment", f"pad channels to multiples of {npu.channel_alignment} with zero filters "
                   f"(exact; {len(rewrite.changes)} layer changes)", not left, price,
                   [f"in the model: {change}" for change in rewrite.changes], details, trial=trial.index,
                   passes=trial.passed)

    def skip_conv(self) -> Fix | None:
        if not any(r.code == RAM_NOFIT for r in self.reference.reasons):
            return None
        try:
            rewrite = reduce_skips(deployable_graph(self.graph.copy()))
        except McuDeployError:
            return None
        trial = self.run_config({}, "1x1 conv halving the skips", rewrite.graph)
        before, after = self.reference.metrics, trial.metrics
        price = {"arena_before": before.arena_bytes if before else None,
                 "arena_after": after.arena_bytes if after else None,
                 "macc_cost_percent": round(100.0 * (rewrite.macc_after / rewrite.macc_before - 1), 2),
                 "latency_ms": _latency_ms(trial), "accuracy": "needs retraining"}
        return Fix("skip_conv", f"a 1x1 conv before each skip concat halving the skip ({len(rewrite.changes)} "
                   "layer changes)", _gone(trial, MEMORY), price, [f"in the model: {c}" for c in rewrite.changes],
                   [] if trial.passed else _left(trial), trial=trial.index, exact=False, passes=trial.passed)

    def resolution(self, tiled: bool = False) -> Fix | None:
        found = spatial_input(self.graph)
        if found is None:
            return Fix("resolution", "not an image model with one 4-D input: no resolution fix", False)
        value, h_axis, w_axis = found
        height, width = value.shape[h_axis], value.shape[w_axis]
        step = _downsampling(self.graph, value, h_axis) * max(1, self.search.target.input_spatial_multiple)
        sizes = list(range(height - height % step - (step if height % step == 0 else 0), 0, -step))
        if not sizes:
            return Fix("resolution", f"the input {height}x{width} has no smaller size on multiples of {step}", False)
        if tiled and not self.resizable:
            return None                  # the untiled fix already said why the input cannot shrink
        self.resizable = True
        changes = {} if "split_arena" in self.space.locked else {"split_arena": True}
        changes["tiling_auto"] = tiled
        label = " with tiling" if tiled else ""

        def run(size: int):
            shape = list(value.shape)
            shape[h_axis], shape[w_axis] = size, max(step, round(width * size / height / step) * step)
            try:
                graph = rebuild(self.graph, {value.name: tuple(shape)})
            except McuDeployError as err:
                raise _Refused(str(err)) from None
            return self.run_config(changes, f"input {shape[h_axis]}x{shape[w_axis]}{label}", graph)
        expected = self._expected_seconds(changes)
        try:
            result = boundary([height, *sizes], run, lambda t: _gone(t, MEMORY), high_first=False,
                              stop=lambda: self.search.out_of_time(expected))
        except _Refused as err:
            self.resizable = False
            return Fix("resolution", f"no smaller input: {err}", False)
        if not result.found:
            return Fix("resolution", f"no input size down to {sizes[-1]}x{sizes[-1]} fits{label}", False)
        if result.failing is None:
            return None                  # the full size fits: nothing to shrink
        return self._resolution_fix(value, result, (height, width, h_axis, w_axis), changes, label)

    def _expected_seconds(self, changes: dict) -> float:
        """What one more trial of ``changes`` may cost: the longest trial so far that tiles
        automatically, when it does (an automatic tiling of a U-Net 264x264 took 144 s, past
        the end of --time, after tiled trials of 10-137 s), else 0. A bisection step is not
        started when it would end past the time budget."""
        if not changes.get("tiling_auto"):
            return 0.0
        return max((t.seconds for t in self.search.trials if t.config.get("tiling_auto")), default=0.0)

    def _resolution_fix(self, value, result, geometry, changes: dict, label: str) -> Fix:
        height, width, h_axis, w_axis = geometry
        size, trial = result.passing, result.passing_trial
        new_width = round(width * size / height)
        before = self.reference.metrics
        price = {"input": f"{size}x{new_width}", "pixels_percent": round(100 * size * new_width / (height * width), 1),
                 "macc_percent": round(100 * trial.metrics.macc / before.macc, 1) if before and before.macc else None,
                 "latency_ms": _latency_ms(trial), "latency_at_full_size_ms": _latency_ms(self.reference),
                 "ram_bytes": trial.metrics.ram_bytes, "accuracy": "not measured: evaluate the model at this size"}
        shape = list(value.shape)
        shape[h_axis], shape[w_axis] = size, new_width
        apply = [_resize_command(self.graph, value, shape, f"{size}x{new_width}")] + [f"[{'tiling' if k == 'tiling_auto' else 'memory'}] "
                                      f"{'auto' if k == 'tiling_auto' else k} = true" for k, v in changes.items() if v]
        failing = (f"{result.failing}x{round(width * result.failing / height)} fails (trial {result.failing_trial.index})"
                   if result.failing is not None else "the full size passes")
        title = f"input {size}x{new_width} instead of {height}x{width}: the largest that fits{label}"
        if not result.exact:
            title = (f"input {size}x{new_width} instead of {height}x{width} fits{label}; the largest lies between it "
                     f"and {result.failing}x{round(width * result.failing / height)} (bisection stopped by --time)")
        return Fix("resolution", title,
                   True, price, apply, [failing] + ([] if trial.passed else _left(trial)), trial=trial.index,
                   passes=trial.passed, changes=changes)

    def found_by_search(self, first) -> Fix:
        """The exploration itself removed the memory reasons of the defaults: say how."""
        changes = {k: v for k, v in self.config.items() if first.config.get(k) != v}
        lines = [f"{k} = {v}" for k, v in changes.items()]
        return Fix("search", f"the configuration of trial {self.reference.index} removes the defaults' "
                   f"{'/'.join(sorted({r.code for r in first.reasons if r.code in MEMORY}))} reasons", True,
                   {"latency_ms": _latency_ms(self.reference), "on_chip_bytes": self.reference.metrics.on_chip_bytes,
                    **self.reference.metrics.extra}, [f"change: {line}" for line in lines],
                   _left(self.reference), trial=self.reference.index, changes=changes)

    def combined(self, fixes: list[Fix]) -> Fix | None:
        """The alignment rewrite with the cheapest verified memory fix, in one trial."""
        memory = [f for f in fixes if f.verified and f.kind in ("psram", "tiling", "split", "search")]
        aligned = any(f.kind == "alignment" and f.verified for f in fixes)
        if any(f.passes for f in fixes) or not aligned or self.rewritten is None:
            return None
        chosen = min(memory, key=lambda f: (CLASS_RANK[f.kind], f.price.get("latency_ms") or math.inf)) \
            if memory else None
        changes = dict(chosen.changes) if chosen and chosen.kind != "search" else {}
        trial = self.run_config(changes, f"channels padded{' + ' + chosen.kind if chosen else ''}", self.rewritten)
        if not trial.passed and {**self.config, **changes}.get("tiling_auto"):   # wider channels: more halo
            changes["tiling_max_overhead"] = 0.3
            trial = self.run_config(changes, "channels padded + tiling (max overhead 0.3)", self.rewritten)
        return Fix("combined", f"channel padding{' + ' + chosen.title if chosen else ''}", trial.passed,
                   {"latency_ms": _latency_ms(trial), "on_chip_bytes": trial.metrics.on_chip_bytes if trial.metrics
                    else None, "external_bytes": trial.metrics.external_bytes if trial.metrics else None},
                   ["the lines of both fixes"], [] if trial.passed else _left(trial), trial=trial.index,
                   passes=trial.passed, changes=changes)


class _Refused(Exception):
    pass


def _pinned_lines(extra: dict) -> str:
    regions = extra.get("pinned_tiling_regions")
    points = extra.get("pinned_split_points")
    lines = []
    if regions:
        lines.append("[tiling] regions = [" + ", ".join(
            f'{{start = "{r["start"]}", end = "{r["end"]}", tiles = {r["tiles"]}}}' for r in regions) + "]")
    if points:
        lines.append("[split] points = [" + ", ".join(f'"{p}"' for p in points) + "]")
    return "; ".join(lines)


def _resize_command(graph, value, shape: list[int], size: str) -> str:
    """How the user applies a new input size: a float model is re-imported at it; a quantized
    one (its exported Reshapes and Resizes hold the old sizes, so ``--input-shape`` on it is
    refused) is quantized again from the float model at that size."""
    option = f"--input-shape {value.name}={','.join(map(str, shape))}"
    if precision(graph) == "float":
        return f"{option}   (re-import: the model is fully convolutional)"
    int8_io = " --int8-io" if all(v.dtype.value in ("int8", "uint8") for v in graph.inputs) else ""
    return (f"mcudeploy quantize FLOAT_MODEL {option} --calib DATA -o MODEL_{size}.onnx{int8_io}   (the model given is quantized: its exported shapes are fixed, so quantize the float "
            "model again at this size; verified here on the rebuilt graph)")


def _global_pool(node) -> bool:
    """A pooling whose window covers its whole input map (its stride does not constrain the size)."""
    kernel, x = node.attrs.get("kernel_shape"), node.inputs[0]
    if node.op not in ("MaxPool", "AveragePool") or not kernel or x is None or x.rank != 4:
        return False
    height = x.shape[{"NHWC": 1, "NCHW": 2}.get(node.attrs.get("layout", "") or x.layout or "", 2)]
    return int(kernel[0]) >= height


def _downsampling(graph, value, h_axis: int) -> int:
    """The input height's step: the deepest down-sampling along any path, from the layers'
    strides (a strided Conv / pooling multiplies it by its row stride, a ConvTranspose
    divides it by its stride, a Resize by its row scale; any other node keeps the largest of
    its inputs'; a global pooling none). Three 2x2 poolings: 8 (a U-Net 256 may be resized on multiples of 8). The
    tensors' heights are not used: a 1-row tensor (a global pooling, a 1-channel NCHW relayout)
    would make it the whole input height."""
    factors: dict[str, Fraction] = {value.name: Fraction(1)}
    deepest = Fraction(1)
    for node in graph.nodes:
        known = [factors[v.name] for v in node.inputs if v is not None and v.name in factors]
        if not known:
            continue
        factor = max(known)
        strides = node.attrs.get("strides")
        if node.op in ("Conv", "MaxPool", "AveragePool") and strides and not _global_pool(node):
            factor *= int(strides[0])
        elif node.op == "ConvTranspose" and strides:
            factor /= int(strides[0])
        elif node.op == "Resize" and node.inputs[0] is not None and node.outputs[0].rank == 4:
            source, out = node.inputs[0].shape, node.outputs[0].shape
            axis = {"NHWC": 1, "NCHW": 2}.get(node.attrs.get("layout", "") or node.outputs[0].layout or "", h_axis)
            factor *= Fraction(source[axis], out[axis])
        for out in node.outputs:
            factors[out.name] = factor
        deepest = max(deepest, factor)
    return max(1, math.ceil(deepest))


def _equivalent(original, rewritten) -> str:
    """Outputs of both graphs on random inputs (at a small input size when the model is
    fully convolutional): exactly equal, or the largest difference."""
    found = spatial_input(original)
    if found is not None:
        value, h_axis, w_axis = found
        shape = list(value.shape)
        shape[h_axis] = shape[w_axis] = min(value.shape[h_axis], EQUIVALENCE_SIZE)
        try:
            original, rewritten = rebuild(original, {value.name: tuple(shape)}), rebuild(rewritten, {value.name: tuple(shape)})
        except McuDeployError:
            pass
    run = run_int if precision(original) == "integer" else run_float
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(EQUIVALENCE_SAMPLES):
        feeds = {v.name: _random_input(v, rng) for v in original.inputs}
        first, second = run(original, feeds), run(rewritten, feeds)
        for name in first:
            worst = max(worst, float(np.max(np.abs(first[name].astype(np.float64) - second[name].astype(np.float64)))))
    shape_text = "x".join(map(str, original.inputs[0].shape))
    return f"{'bit-equal' if worst == 0 else f'max difference {worst:.3g}'} on {EQUIVALENCE_SAMPLES} random inputs ({shape_text})"


def _random_input(value, rng) -> np.ndarray:
    if value.dtype.is_integer:
        info = np.iinfo(value.dtype.numpy)
        return rng.integers(info.min, info.max + 1, value.shape).astype(value.dtype.numpy)
    return rng.random(value.shape, dtype=np.float32)


def _steps(fixer: Fixer, codes: set[str]) -> list[tuple[str, Callable[[], Fix | None]]]:
    """(kind, fix) for the reason codes of the reference trial (module docstring)."""
    steps: list[tuple[str, Callable[[], Fix | None]]] = []
    if codes & set(MEMORY):
        steps += [("sram_limit", fixer.sram_limit), ("reserve", fixer.reserve), ("int8_io", fixer.int8_io),
                  ("psram", fixer.psram), ("tiling", lambda: fixer.stage("tiling", "tiling_auto", "tiling")),
                  ("split", fixer.split), ("skip_conv", fixer.skip_conv),
                  ("resolution", fixer.resolution)]
        steps += [("resolution", lambda: fixer.resolution(tiled=True))] if fixer.tiling else []
    if ALIGNMENT in codes:
        steps.append(("alignment", fixer.alignment))
    return steps


def _out_of_time(search) -> bool:
    limit = search.request.time_limit
    return limit is not None and search._elapsed() > limit


def what_if(search, space) -> list[Fix]:
    """Every applicable fix (module docstring), verified, cheapest first."""
    fixer = Fixer(search, space)
    first = search.trials[0]
    codes = {r.code for r in fixer.reference.reasons}
    search.log.note(f"nothing passes: what-if fixes for {', '.join(sorted(codes))} of trial {fixer.reference.index} "
                    "(the least failing)")
    fixes: list[Fix] = []
    if not codes & set(MEMORY) and any(r.code in MEMORY for r in first.reasons):
        fixes.append(fixer.found_by_search(first))
    for kind, step in _steps(fixer, codes) + [("combined", lambda: fixer.combined(fixes))]:
        if _out_of_time(search):     # said, not silently dropped: the user can give more --time
            fix: Fix | None = Fix(kind, f"not tried: the time budget (--time {search.request.time_limit:g} s) "
                                  "was spent; give more time to verify it", False)
        else:
            fix = step()
        if fix is None:
            continue
        fix.rank = _rank(fix, fixer.reference)
        fixes.append(fix)
        search.log.note(f"fix [{fix.kind}] {'verified' if fix.verified else 'NOT verified'}"
                        f"{', passes' if fix.passes else ''}: {fix.title}", {"fix": fix.to_json()})
    return sorted(fixes, key=lambda f: (f.rank, f.kind))
