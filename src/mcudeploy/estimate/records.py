"""The estimator's output records: one :class:`LayerCost` per node and the :class:`Estimate`.

Plain data, JSON-ready (:meth:`Estimate.to_json`, :meth:`Estimate.csv_rows`). Units: time in
microseconds, bytes per inference, bandwidth in bytes per second, cycles of the device that
runs the layer (CPU core clock or NPU clock).

Per layer: ``time_us = cycles / clock`` with ``cycles = compute + memory + overhead`` on a CPU
(an in-order core waits for its loads) and ``max(compute, memory) + overhead`` in an NPU epoch
(streams overlap the compute). ``bound`` names the largest of the three terms. A layer whose
cost cannot be computed (no instruction model for its kernel, a target figure missing) has
``known = False`` and says why in ``notes``; it adds nothing to the totals, and
``Estimate.complete`` is False.

Totals: ``latency_us = sum(time_us)`` (layers run one after the other; the per-inference
overhead of the runtime is its own line), ``bytes[region] = sum over layers`` (read + write),
``mean_bandwidth[region] = bytes / latency``, ``peak_bandwidth[region] = max over layers of
bytes_layer / time_layer``, ``device_share[device] = time on device / latency``, ``energy_uj =
sum(time_device x power_device)`` when the target gives the power figures.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

BOUNDS = ("compute", "memory", "overhead", "unknown")


@dataclass
class LayerCost:
    """The estimated cost of one layer."""
    node: str
    op: str
    device: str                           # "cpu", "npu"
    kernel: str                           # kernel key (instruction model) or "npu epoch"
    macc: int
    compute_cycles: float = 0.0           # CPU: instructions x CPI; NPU: MAC array cycles
    instructions: float = 0.0             # CPU only
    flash_weight_bytes: int = 0           # CPU: bytes of constant operands in flash (calibrated streaming cost)
    npu_cycles: float = 0.0               # NPU only: the epoch's cycles
    memory_cycles: float = 0.0            # CPU: wait states; NPU: the slowest stream / memory
    overhead_cycles: float = 0.0          # call, epoch set-up
    cycles: float = 0.0
    clock_hz: float = 0.0
    time_us: float = 0.0
    bound: str = "unknown"
    bytes_read: dict[str, int] = field(default_factory=dict)      # region -> bytes
    bytes_written: dict[str, int] = field(default_factory=dict)
    epoch: int | None = None              # NPU: the epoch index
    hardware_epochs: int = 0              # NPU: hardware epochs it takes (a split layer: 2)
    work_bytes: int = 0                   # NPU: work buffer (intermediate, partial sums)
    known: bool = True
    failure: str = ""                     # predicted not to run (why), e.g. an NPU epoch's buffers
    cause: str = ""                       # the dominant term in words
    notes: list[str] = field(default_factory=list)

    @property
    def bytes_moved(self) -> dict[str, int]:
        total = dict(self.bytes_read)
        for region, count in self.bytes_written.items():
            total[region] = total.get(region, 0) + count
        return total


@dataclass
class Estimate:
    """The estimated latency of a deployment, layer by layer."""
    model: str
    target: str
    runtime: str
    core_clock_hz: float
    npu_clock_hz: float | None
    layers: list[LayerCost]
    overhead_us: float = 0.0              # per inference: runtime entry, NPU run set-up
    overhead_instructions: float = 0.0    # the CPU part of it, in instructions
    overlay: str | None = None
    notes: list[str] = field(default_factory=list)
    power_mw: dict[str, float] = field(default_factory=dict)   # device -> active power
    expected_error: str = ""              # the runtime profile's cross-validated error, in words
    expected_error_band: float | None = None     # printed beside the figure: the larger cross-validated median
    executor: str = "mcudeploy"           # who runs the nodes: mcudeploy (its CPU code) | vendor-npu

    @property
    def complete(self) -> bool:
        return all(layer.known for layer in self.layers)

    @property
    def failures(self) -> list[str]:
        return [f"{layer.node}: {layer.failure}" for layer in self.layers if layer.failure]

    @property
    def latency_us(self) -> float:
        return self.overhead_us + sum(layer.time_us for layer in self.layers if layer.known)

    @property
    def cpu_instructions(self) -> float:
        """Instructions the core executes per inference (CPU layers + the runtime's overhead)."""
        cpu = (layer for layer in self.layers if layer.known and layer.device == "cpu")
        return self.overhead_instructions + sum(layer.instructions for layer in cpu)

    @property
    def latency_ms(self) -> float:
        return self.latency_us / 1000.0

    def bytes_per_region(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for layer in self.layers:
            for region, count in layer.bytes_moved.items():
                totals[region] = totals.get(region, 0) + count
        return dict(sorted(totals.items()))

    def mean_bandwidth(self) -> dict[str, float]:
        seconds = self.latency_us / 1e6
        return {region: count / seconds for region, count in self.bytes_per_region().items()} if seconds else {}

    def peak_bandwidth(self) -> dict[str, float]:
        peaks: dict[str, float] = {}
        for layer in self.layers:
            if layer.known and layer.time_us > 0:
                for region, count in layer.bytes_moved.items():
                    peaks[region] = max(peaks.get(region, 0.0), count / (layer.time_us / 1e6))
        return dict(sorted(peaks.items()))

    def device_time_us(self) -> dict[str, float]:
        times: dict[str, float] = {}
        for layer in self.layers:
            if layer.known:
                times[layer.device] = times.get(layer.device, 0.0) + layer.time_us
        if self.overhead_us:
            times["cpu"] = times.get("cpu", 0.0) + self.overhead_us
        return times

    def device_share(self) -> dict[str, float]:
        total = self.latency_us
        return {device: time / total for device, time in self.device_time_us().items()} if total else {}

    @property
    def energy_uj(self) -> float | None:
        """sum(device time x device power) when every device used has a power figure."""
        times = self.device_time_us()
        if not times or any(self.power_mw.get(device, 0.0) <= 0 for device in times):
            return None
        return sum(time * self.power_mw[device] / 1000.0 for device, time in times.items())

    def top_layers(self, count: int = 5) -> list[LayerCost]:
        return sorted((layer for layer in self.layers if layer.known), key=lambda layer: -layer.time_us)[:count]

    def summary(self) -> dict:
        return {"model": self.model, "target": self.target, "executor": self.executor, "runtime": self.runtime,
                "core_clock_hz": self.core_clock_hz, "npu_clock_hz": self.npu_clock_hz,
                "latency_ms": round(self.latency_ms, 6), "complete": self.complete,
                "unknown_layers": [layer.node for layer in self.layers if not layer.known],
                "unknown_layer_ops": {layer.node: layer.op for layer in self.layers if not layer.known},
                "failures": self.failures,
                "overhead_us": round(self.overhead_us, 3),
                "cpu_instructions": round(self.cpu_instructions),
                "bytes_per_region": self.bytes_per_region(),
                "mean_bandwidth_bytes_per_s": {r: round(v) for r, v in self.mean_bandwidth().items()},
                "peak_bandwidth_bytes_per_s": {r: round(v) for r, v in self.peak_bandwidth().items()},
                "device_share": {d: round(v, 4) for d, v in self.device_share().items()},
                "energy_uj": None if self.energy_uj is None else round(self.energy_uj, 3),
                "overlay": self.overlay, "expected_error": self.expected_error,
                "expected_error_band": self.expected_error_band, "notes": list(self.notes)}

    def to_json(self) -> dict:
        return {**self.summary(), "layers": [asdict(layer) for layer in self.layers]}

    def csv_rows(self) -> list[dict]:
        """One row per layer, bytes per region flattened to ``read:REGION`` / ``write:REGION``."""
        regions = sorted({r for layer in self.layers for r in layer.bytes_moved})
        rows = []
        for layer in self.layers:
            row = {"node": layer.node, "op": layer.op, "device": layer.device, "kernel": layer.kernel,
                   "macc": layer.macc, "instructions": round(layer.instructions),
                   "compute_cycles": round(layer.compute_cycles), "memory_cycles": round(layer.memory_cycles),
                   "overhead_cycles": round(layer.overhead_cycles), "cycles": round(layer.cycles),
                   "time_us": round(layer.time_us, 3), "bound": layer.bound, "known": layer.known}
            for region in regions:
                row[f"read:{region}"] = layer.bytes_read.get(region, 0)
                row[f"write:{region}"] = layer.bytes_written.get(region, 0)
            rows.append(row)
        return rows
