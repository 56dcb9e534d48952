"""Cost of the NPU's hardware epochs on a Neural-ART-class NPU (convolution accelerators fed by
stream engines over the NPU's bus interfaces), from the target's ``[npu]`` and region figures.

Epochs: NPU nodes in plan order; a pooling or activation node that reads only the output of
the node before it (and is its only reader) is fused into that node's epoch, as ST's compiler
does (Conv + MaxPool: one epoch). Per epoch, with ``A`` accelerators of ``M`` MACs per cycle:

    compute = sum over outputs of ceil(MACs per output / (A x M))     (the chained accelerators
              produce one output element per cycle; a deeper dot product takes more passes)
    stream  = max over operand streams of bytes / stream_bytes_per_cycle
    memory  = max over regions of bytes in the region / bytes per NPU cycle of the region,
              and total bytes / (bus_interfaces x bus_bytes_per_cycle)
    cycles  = max(compute, stream, memory) + epoch set-up
              (epoch_setup_cycles with the epoch controller, epoch_setup_cycles_software without)

A region's bytes per NPU cycle are the ST ``.mpool`` ``byte_width / freq_ratio`` when given,
else ``bandwidth / NPU clock``; on-chip memories run from the NPU's clock tree (their bytes
per cycle stay when ``--npu-clock`` changes), external ones (flash, PSRAM) keep their bytes per
second. Weights are streamed once per epoch; activations are read and written once (a Slice
reads only the rows it copies, :func:`.traffic.input_bytes_moved`).

Splits (target data, each an observation of ST's tools, see ``targets/builtin/stm32n6.toml``):

* a 1x1 convolution on fewer than ``pointwise_split_channels`` input channels runs as two
  epochs, the second re-reading an intermediate the size of the output (the work buffer);
* a kernel taller or wider than ``max_native_kernel`` is computed in bands of at most
  ``kernel_band_rows`` kernel rows, each writing int32 partial sums to memory; when
  those partial sums fit no on-chip region the NPU reaches, the layer is predicted to fail.

Nodes the mapping left on the CPU are software epochs on the host core (:mod:`.cpu`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..ir import Node, get_op
from ..targets import Npu
from .causes import describe, npu_compute_detail, npu_memory_detail
from .records import LayerCost
from .traffic import input_bytes_moved

FUSABLE = ("MaxPool", "AveragePool", "Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSwish")
NPU_KEYS = ("accelerators", "macs_per_accelerator", "stream_bytes_per_cycle", "bus_interfaces",
            "bus_bytes_per_cycle")


@dataclass
class Epoch:
    """One hardware epoch of the NPU."""
    nodes: list[Node] = field(default_factory=list)

    @property
    def head(self) -> Node:
        return self.nodes[0]


def missing_npu_figures(npu: Npu) -> list[str]:
    return [f"[npu] {key}" for key in NPU_KEYS if not getattr(npu, key)]


def group_epochs(nodes: list[Node]) -> list[Epoch]:
    """Consecutive NPU nodes -> epochs, fusing a pooling / activation into its producer's."""
    epochs: list[Epoch] = []
    for node in nodes:
        previous = epochs[-1].nodes[-1] if epochs else None
        if previous is not None and node.op in FUSABLE and _only_reader(previous, node):
            epochs[-1].nodes.append(node)
        else:
            epochs.append(Epoch([node]))
    return epochs


def _only_reader(producer: Node, node: Node) -> bool:
    data = [v for v in node.inputs if v is not None and not v.is_constant]
    out = producer.outputs[0]
    return len(data) == 1 and data[0] is out and len(out.uses) == 1


def _macs_per_output(node: Node) -> int:
    out = node.outputs[0]
    return math.ceil(int(get_op(node.op).macc(node)) / max(1, out.size))


def compute_cycles(node: Node, npu: Npu) -> float:
    """Accelerator cycles of one node (module docstring); data movement ops: one element per cycle."""
    per_pass = npu.accelerators * npu.macs_per_accelerator
    macs = _macs_per_output(node)
    return node.outputs[0].size * max(1, math.ceil(macs / per_pass))


def kernel_bands(node: Node, npu: Npu) -> int:
    """Bands of kernel rows a convolution is split into (1: runs natively)."""
    if node.op != "Conv" or not npu.max_native_kernel:
        return 1
    kernel_h, kernel_w = node.inputs[1].shape[1:3]
    if max(kernel_h, kernel_w) <= npu.max_native_kernel:
        return 1
    return math.ceil(kernel_h / (npu.kernel_band_rows or npu.max_native_kernel))


def pointwise_split(node: Node, npu: Npu) -> bool:
    if node.op != "Conv" or not npu.pointwise_split_channels:
        return False
    x, w = node.inputs[0], node.inputs[1]
    return tuple(w.shape[1:3]) == (1, 1) and x.shape[-1] < npu.pointwise_split_channels


@dataclass
class Stream:
    """One data stream of an NPU epoch."""
    region: str
    bytes: float
    write: bool = False


def epoch_streams(epoch: Epoch, setting) -> tuple[list[Stream], int, str]:
    """Operand streams of an epoch, the work-buffer bytes it needs and a failure (or "")."""
    head, last = epoch.head, epoch.nodes[-1]
    npu = setting.target.npu
    streams = [Stream(setting.region_of(v), input_bytes_moved(head, v)) for v in head.inputs if v is not None]
    streams.append(Stream(setting.region_of(last.outputs[0]), last.outputs[0].nbytes, write=True))
    work, failure = 0, ""
    if pointwise_split(head, npu):
        work = head.outputs[0].nbytes
        home = setting.region_of(head.outputs[0])
        streams += [Stream(home, work, write=True), Stream(home, work)]
    bands = kernel_bands(head, npu)
    if bands > 1:
        partial = head.outputs[0].size * 4
        work = bands * partial
        region, failure = setting.work_region(work, f"{bands} bands of int32 partial sums of the "
                                              f"{'x'.join(map(str, head.inputs[1].shape[1:3]))} kernel")
        streams += [Stream(region, work, write=True), Stream(region, work)]
    return streams, work, failure


def _memory_terms(streams: list[Stream], setting) -> tuple[float, dict[str, float], dict[str, float]]:
    """(memory cycles, bytes per region, cycles per region) of an epoch's streams (module docstring)."""
    npu = setting.target.npu
    stream = max((s.bytes / npu.stream_bytes_per_cycle for s in streams), default=0.0)
    per_region: dict[str, float] = {}
    for s in streams:
        per_region[s.region] = per_region.get(s.region, 0.0) + s.bytes
    terms = {region: count / setting.npu_bytes_per_cycle(region) for region, count in per_region.items()}
    bus = sum(per_region.values()) / (npu.bus_interfaces * npu.bus_bytes_per_cycle)
    return max([stream, bus, *terms.values()]), per_region, terms


def _cause(cost: LayerCost, head: Node, per_region: dict, terms: dict, setting) -> str:
    npu = setting.target.npu
    slowest = max(terms, key=terms.__getitem__) if terms else ""
    if cost.bound == "memory" and slowest:
        detail = npu_memory_detail(slowest, per_region[slowest], setting.npu_bytes_per_cycle(slowest),
                                   setting.npu_clock_hz)
    elif cost.bound == "compute":
        detail = npu_compute_detail(head.outputs[0].size, _macs_per_output(head),
                                    npu.accelerators * npu.macs_per_accelerator)
    else:
        detail = f"{cost.overhead_cycles:.0f} cycles of epoch set-up"
    return describe(cost, detail)


def npu_epoch_cost(epoch: Epoch, index: int, setting) -> list[LayerCost]:
    """One :class:`LayerCost` per node of the epoch: the head carries the epoch's cycles."""
    npu = setting.target.npu
    head = epoch.head
    epochs = 2 if pointwise_split(head, npu) else 1     # the second streams every output once more
    compute = epochs * sum(compute_cycles(node, npu) for node in epoch.nodes if node is head or node.op not in FUSABLE)
    streams, work, failure = epoch_streams(epoch, setting)
    memory, per_region, terms = _memory_terms(streams, setting)
    setup = epochs * (npu.epoch_setup_cycles if setting.epoch_controller else npu.epoch_setup_cycles_software)
    cost = LayerCost(head.name, head.op, "npu", "npu epoch", sum(int(get_op(n.op).macc(n)) for n in epoch.nodes),
                     compute_cycles=compute, memory_cycles=memory, overhead_cycles=setup, epoch=index,
                     clock_hz=setting.npu_clock_hz, hardware_epochs=epochs, work_bytes=work, failure=failure)
    cost.npu_cycles = cost.cycles = max(compute, memory) + setup
    cost.time_us = cost.cycles / setting.npu_clock_hz * 1e6
    cost.bound = max({"compute": compute, "memory": memory, "overhead": setup}.items(), key=lambda kv: kv[1])[0]
    for s in streams:
        side = cost.bytes_written if s.write else cost.bytes_read
        side[s.region] = side.get(s.region, 0) + int(s.bytes)
    cost.cause = _cause(cost, head, per_region, terms, setting)
    cost.notes.append(f"epoch {index}: {epochs} hardware epoch(s)" + (f"; work buffer {work} bytes" if work else ""))
    fused = [LayerCost(n.name, n.op, "npu", "fused", int(get_op(n.op).macc(n)), epoch=index,
                       clock_hz=setting.npu_clock_hz, bound="overhead", notes=[f"fused into epoch {index} ({head.name})"],
                       cause=f"layer {n.name} is fused into epoch {index} ({head.name})")
             for n in epoch.nodes[1:]]
    return [cost, *fused]
