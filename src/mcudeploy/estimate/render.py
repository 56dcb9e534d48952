"""Words and tables of an :class:`~.records.Estimate`, as plain text (the CLI prints them).

:func:`summary_lines` (latency, clocks, bytes and bandwidth per region, device shares, energy),
:func:`layer_rows` (the per-layer table: node, device, bound, time, bytes per region),
:func:`top_lines` (the slowest layers and why) and :func:`latency_line` (the one line ``plan``
and ``generate`` print).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from .causes import rate_text, size_text
from .records import Estimate

if TYPE_CHECKING:
    from ..deployment import Deployment

LAYER_HEADER = ("#", "layer", "op", "device", "bound", "time", "share", "bytes per region")


def time_text(microseconds: float) -> str:
    """``1234.5 -> '1.234 ms'``, ``12.3 -> '12.3 us'`` (no exponent notation)."""
    if microseconds >= 1e6:
        return f"{microseconds / 1e6:.4g} s"
    if microseconds >= 1e3:
        return f"{microseconds / 1e3:.4g} ms"
    return f"{microseconds:.3g} us"


def _clock(hz: float | None) -> str:
    return "-" if not hz else f"{hz / 1e6:g} MHz"


def summary_lines(estimate: Estimate) -> list[str]:
    band = f" +-{estimate.expected_error_band:.0%}" if estimate.expected_error_band is not None else ""
    lines = [f"estimated latency: {estimate.latency_ms:.4g} ms{band} ({estimate.model} on {estimate.target}, "
             f"executor {estimate.executor}, runtime {estimate.runtime}, core {_clock(estimate.core_clock_hz)}"
             + (f", NPU {_clock(estimate.npu_clock_hz)}" if estimate.npu_clock_hz else "") + ")"]
    if estimate.expected_error:
        lines.append(f"expected error: {estimate.expected_error}")
    if not estimate.complete:
        unknown = [f"{layer.node} ({layer.op})" for layer in estimate.layers if not layer.known]
        lines.append(f"INCOMPLETE: {len(unknown)} layer(s) not costed, not counted: {', '.join(unknown[:8])}"
                     + (f" and {len(unknown) - 8} more" if len(unknown) > 8 else ""))
    for failure in estimate.failures:
        lines.append(f"PREDICTED TO FAIL: {failure}")
    shares = ", ".join(f"{device} {share:.0%}" for device, share in estimate.device_share().items())
    lines.append(f"time per device: {shares}; runtime overhead {time_text(estimate.overhead_us)} per inference")
    peaks = estimate.peak_bandwidth()
    means = estimate.mean_bandwidth()
    for region, count in estimate.bytes_per_region().items():
        lines.append(f"  {region}: {size_text(count)} per inference, mean {rate_text(means.get(region, 0))}, "
                     f"peak {rate_text(peaks.get(region, 0))}")
    if estimate.energy_uj is not None:
        lines.append(f"energy: {estimate.energy_uj:.4g} uJ per inference (target power figures)")
    if estimate.overlay:
        lines.append(f"calibrated constants from {estimate.overlay}")
    lines += [f"note: {note}" for note in estimate.notes]
    return lines


def layer_rows(estimate: Estimate) -> list[tuple[str, ...]]:
    total = estimate.latency_us or 1.0
    rows: list[tuple[str, ...]] = []
    for index, layer in enumerate(estimate.layers):
        moved = ", ".join(f"{region} {size_text(count)}" for region, count in sorted(layer.bytes_moved.items()) if count)
        time = time_text(layer.time_us) if layer.known else "unknown"
        rows.append((str(index), layer.node, layer.op, layer.device, layer.bound, time,
                     f"{layer.time_us / total:.1%}" if layer.known else "-", moved or "-"))
    return rows


def top_lines(estimate: Estimate, count: int = 5) -> list[str]:
    total = estimate.latency_us or 1.0
    return [f"{time_text(layer.time_us):>10} {layer.time_us / total:6.1%}  {layer.cause}" for layer in estimate.top_layers(count)]


def latency_line(estimate: Estimate) -> str:
    """``estimated latency 1.95 s at 120 MHz (mcudeploy kernels; slowest: conv ...)``."""
    top = estimate.top_layers(1)
    slowest = f"; slowest layer {top[0].node} ({top[0].bound}-bound, {top[0].time_us / 1000:.3g} ms)" if top else ""
    unknown = [f"{layer.node} ({layer.op})" for layer in estimate.layers if not layer.known]
    state = "" if not unknown else (f" (incomplete: {len(unknown)} layer(s) not costed: {', '.join(unknown[:3])}"
                                    + (" ..." if len(unknown) > 3 else "") + ")")
    band = f" +-{estimate.expected_error_band:.0%}" if estimate.expected_error_band is not None else ""
    return (f"estimated latency {estimate.latency_ms:.4g} ms{band} at {_clock(estimate.core_clock_hz)}"
            + (f" / NPU {_clock(estimate.npu_clock_hz)}" if estimate.npu_clock_hz else "")
            + f" (executor {estimate.executor}, runtime {estimate.runtime}){state}{slowest}; details: mcudeploy estimate")


def latency_lines(deployment: Deployment, record: Callable[[Estimate], None] | None = None) -> list[str]:
    """The line ``plan`` and ``generate`` print (none without a target); an estimator error
    becomes a short remark, never a failed command. ``record`` receives the estimate (the CLI
    records it with the run, so the run's report shows the latency the command printed)."""
    if deployment.target is None:
        return []
    from ..errors import McuDeployError
    from .estimator import estimate
    try:
        result = estimate(deployment)
    except McuDeployError as error:
        return [f"no latency estimate: {error}"]
    if record is not None:
        record(result)
    return [latency_line(result)]
