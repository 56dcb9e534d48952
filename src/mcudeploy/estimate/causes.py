"""The cause of a layer's cost in words: which term dominates and why, for reports.

``layer conv7 is memory-bound: 1.2 MB of weights read from octoFlash at 167 MB/s``.
Input: the filled :class:`~.records.LayerCost` records (and, for memory-bound layers, the
operand stream that waited longest, which the layer models put in ``LayerCost.notes`` as
``slowest: ...``). Output: ``LayerCost.cause`` of every layer.
"""
from __future__ import annotations

from ..targets import MemoryRegion
from .records import LayerCost


def size_text(count: float) -> str:
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count:.0f} B"


def rate_text(bytes_per_second: float) -> str:
    if bytes_per_second >= 1e9:
        return f"{bytes_per_second / 1e9:.3g} GB/s"
    return f"{bytes_per_second / 1e6:.3g} MB/s"


def memory_cause(operand: str, region: MemoryRegion, moved: float, waits: float, clock_hz: float) -> str:
    speed = f"at {rate_text(region.bandwidth)}" if region.bandwidth else f"{region.latency_cycles} wait cycles"
    return (f"{size_text(moved)} of {operand} read from {region.name} {speed} "
            f"({waits / clock_hz * 1e6:.3g} us of waits)")


def describe(layer: LayerCost, detail: str = "") -> str:
    if not layer.known:
        return layer.cause or f"layer {layer.node} is unknown"
    if layer.kernel in ("elided", "fused"):
        return f"layer {layer.node} costs nothing on its own ({layer.notes[0] if layer.notes else layer.kernel})"
    where = " on the NPU" if layer.device == "npu" else ""
    text = f"layer {layer.node} is {layer.bound}-bound{where}"
    return text + (f": {detail}" if detail else "")


def compute_detail(layer: LayerCost, code_class: str, cpi: float) -> str:
    return (f"{layer.instructions / 1e6:.3g} M instructions of {code_class} code ({layer.kernel}) at "
            f"{cpi:.3g} cycles each")


def overhead_detail(layer: LayerCost) -> str:
    return f"{layer.overhead_cycles:.0f} cycles of call / set-up for {layer.macc} MACC"


def npu_compute_detail(outputs: int, macs_per_output: int, per_pass: float) -> str:
    passes = max(1, -(-macs_per_output // int(per_pass))) if per_pass else 1
    use = macs_per_output / (passes * per_pass) if per_pass else 0.0
    return (f"{outputs} outputs at one per cycle x {passes} pass(es), {macs_per_output} MACs each "
            f"({use:.0%} of the {per_pass:.0f}-MAC array)")


def npu_memory_detail(region_name: str, moved: float, bytes_per_cycle: float, clock_hz: float) -> str:
    return f"{size_text(moved)} through {region_name} at {rate_text(bytes_per_cycle * clock_hz)}"
