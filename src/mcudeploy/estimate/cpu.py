"""Cost of one layer on the CPU: instructions x cycles per instruction + memory wait states.

    instructions = sum_f c_f n_f                       (:mod:`.instructions`, :mod:`.features`)
    compute      = (instructions - call part) x factor(core, class) x cpi(core, class)
    overhead     = (call part + runtime's per-layer instructions) x factor x cpi
    memory       = sum over operand streams of wait_cycles(stream, region)     (:mod:`.memory`)
                   + flash weight bytes x flash_cycles_per_weight_byte  (calibrated, :mod:`.latency_fit`)
    cycles       = (compute + overhead) x scale(runtime label) x scale(kernel class) + memory
    time_us      = cycles / f_core x 1e6

``class`` is the code class of the node's kernel variant under the runtime (scalar, dsp,
mve; ``data/runtimes.toml``), ``factor`` and ``cpi`` come from ``data/cores.toml`` (or an
overlay), the call part is the fit's ``calls`` coefficient (argument checks, loop set-up).
A layer is unknown (no cycles, ``known = False``) when its kernel has no instruction model or
a region it touches has no speed figures; the notes say which.
"""
from __future__ import annotations

from ..ir import Node, get_op
from .causes import compute_detail, describe, memory_cause, overhead_detail
from .features import features_of
from .instructions import lookup
from .kernel_map import feature_family, kernel_of
from .memory import cache_of, fills_of, missing_figures, prefetches, wait_cycles
from .records import LayerCost
from .traffic import accesses_of


def bound_of(compute: float, memory: float, overhead: float) -> str:
    terms = {"compute": compute, "memory": memory, "overhead": overhead}
    return max(terms, key=terms.__getitem__)


def _byte_counts(accesses) -> tuple[dict[str, int], dict[str, int]]:
    read: dict[str, int] = {}
    written: dict[str, int] = {}
    for access in accesses:
        side = written if access.write else read
        side[access.region] = side.get(access.region, 0) + int(round(access.bytes))
    return read, written


def cpu_layer_cost(node: Node, setting, context: dict) -> LayerCost:
    """The :class:`LayerCost` of ``node`` on the core of ``setting`` (an :class:`.estimator.Setting`)."""
    macc = int(get_op(node.op).macc(node))
    helium = setting.core_model.build == "cortex-m55"
    variant = setting.variants.get(node.name, "reference")
    kernel = kernel_of(node, setting.profile.instructions, helium)
    cost = LayerCost(node.name, node.op, "cpu", kernel or "none", macc, clock_hz=setting.core_clock_hz)
    if kernel is None:
        return _unknown(cost, f"{setting.profile.name} has no kernel for {node.op}")
    family = feature_family(kernel)
    features = features_of(family, node, context)
    fit, note = lookup(setting.profile.instructions, setting.core_model.build, variant, kernel)
    if note:
        cost.notes.append(note)
    if fit is None:
        return _unknown(cost, note)
    code_class = setting.profile.class_of(variant, helium)
    instructions = fit.instructions(features)
    call_part = fit.coefficients.get("calls", 0.0) + setting.profile.per_layer_instructions
    per_instruction = setting.core_model.instruction_factor[code_class] * setting.core_model.cpi[code_class]
    variant_block = setting.profile.pixel_block_of(variant)
    block = variant_block or setting.profile.pixel_block
    traffic = "blocked" if variant_block else setting.profile.traffic
    accesses = accesses_of(node, family, features, setting.plan, traffic, block, context)
    cost.instructions = instructions + setting.profile.per_layer_instructions
    scale = setting.scale * setting.profile.kernel_scale(kernel)
    cost.compute_cycles = max(0.0, instructions - fit.coefficients.get("calls", 0.0)) * per_instruction * scale
    cost.overhead_cycles = call_part * per_instruction * scale
    memory, problems, slowest = _memory_cycles(accesses, setting, cost.compute_cycles)
    cost.bytes_read, cost.bytes_written = _byte_counts(accesses)
    if problems:
        return _unknown(cost, "; ".join(problems))
    cost.flash_weight_bytes = flash_weight_bytes(node, setting)
    # the flash's wait is a time: at another core clock its cycles scale as the memory model's do
    cost.memory_cycles = memory + (cost.flash_weight_bytes * setting.flash_cycles_per_byte
                                   * setting.core_clock_hz / setting.target_clock_hz)
    cost.cycles = cost.compute_cycles + cost.overhead_cycles + cost.memory_cycles
    cost.time_us = cost.cycles / setting.core_clock_hz * 1e6
    cost.bound = bound_of(cost.compute_cycles, cost.memory_cycles, cost.overhead_cycles)
    cost.cause = describe(cost, _detail(cost, code_class, per_instruction, slowest, setting))
    cost.notes.append(f"{code_class} code, {fit.variant} fit on {fit.build} ({fit.samples} samples, "
                      f"max error {fit.max_relative_error:.1%})")
    return cost


def flash_weight_bytes(node: Node, setting) -> int:
    """Bytes of the node's constant operands (weights, biases) that the plan left in internal flash:
    the calibrated streaming cost (``flash_cycles_per_weight_byte``, :mod:`.latency_fit`: what the
    flash interface's prefetch does not hide) applies to them. External flash is charged every
    line fill by the memory model already."""
    total = 0
    for value in node.inputs:
        if value is not None and value.is_constant:
            region = setting.regions.get(setting.region_of(value))
            if region is not None and prefetches(region):
                total += value.nbytes
    return total


def _memory_cycles(accesses, setting, compute: float) -> tuple[float, list[str], tuple]:
    """Total wait cycles, missing-figure problems, and (access, region, waits) of the worst stream.
    A prefetching region hides, per fill, the compute cycles spread over all its fills."""
    pressure: dict[str, int] = {}
    for access in accesses:
        region = setting.regions.get(access.region)
        if region is not None and access.bytes > 0:
            key, _ = cache_of(region, setting.dcache_bytes)
            pressure[key] = pressure.get(key, 0) + access.working_set
    fills: dict[str, float] = {}
    for access in accesses:
        region = setting.regions.get(access.region)
        if region is not None:
            fills[region.name] = fills.get(region.name, 0.0) + fills_of(access, region, setting.dcache_bytes, pressure)
    total, problems, slowest = 0.0, [], (None, None, 0.0)
    for access in accesses:
        region = setting.regions.get(access.region)
        if region is None:
            continue        # no target: nothing to wait for
        hidden = compute / fills[region.name] if fills.get(region.name) else 0.0
        cycles = wait_cycles(access, region, setting.dcache_bytes, setting.core_clock_hz, setting.target_clock_hz,
                             hidden, pressure)
        if cycles is None:
            problems.append(f"region {region.name} has no {' / '.join(missing_figures(region))}")
            continue
        total += cycles
        if cycles > slowest[2]:
            slowest = (access, region, cycles)
    return total, sorted(set(problems)), slowest


def _detail(cost: LayerCost, code_class: str, per_instruction: float, slowest, setting) -> str:
    if cost.bound == "memory" and slowest[0] is not None:
        access, region, waits = slowest
        return memory_cause(access.operand, region, access.bytes, waits, setting.core_clock_hz)
    if cost.bound == "overhead":
        return overhead_detail(cost)
    return compute_detail(cost, code_class, per_instruction)


def _unknown(cost: LayerCost, why: str) -> LayerCost:
    cost.known, cost.bound = False, "unknown"
    cost.notes.append(why)
    cost.cause = f"layer {cost.node} is unknown: {why}"
    return cost
