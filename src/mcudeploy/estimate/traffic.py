"""Memory traffic of one kernel call: bytes read and written per operand, and where they live.

Input: a node, its kernel family, the runtime's access pattern and the deployment's plan
(every activation's region, every weight's region). Output: :class:`Access` records, one per
operand stream: ``bytes`` the kernel moves (its loads / stores), ``unique`` bytes of the tensor,
``working_set`` (the bytes it re-reads between two uses of a byte: if a cache holds them,
only the first pass misses), and the region.

Access patterns (runtime profile ``traffic``), with ``P`` output pixels, ``O`` outputs,
``K = k_h k_w C_g`` and ``taps`` / ``macs`` of :mod:`.features`:

====================  =====================================  ==================================
operand               ``reference`` (mcudeploy's C kernels)   ``blocked`` (CMSIS-NN class)
====================  =====================================  ==================================
conv weights          ``macs`` bytes (re-read per pixel)     ``ceil(P / block) W`` bytes
conv input            ``macs`` elements                      ``P K`` elements (im2col, once)
depthwise weights     ``macs`` bytes                         ``P k_h k_w C`` bytes
fully connected W     ``macs`` bytes                         ``rows W`` bytes
bias, multiplier,     ``12 O`` bytes (int32 each)            same
shift
output                ``O`` elements written                 same
elementwise           every input element read once, every output element written
copies                ``bytes`` read and written (0 when the plan made the op in place:
                      its output on the same bytes as its input, :func:`copy_in_place`;
                      a copy between the on-chip and the external arena always moves them)
strided slice         the output's bytes read (a tile's rows + halo, from wherever the
                      sliced tensor lives), the output written: never the whole tensor
====================  =====================================  ==================================

A tiled region (:mod:`mcudeploy.passes.tile_spatial`) reads each input once per tile through
its Slices, so the bytes charged per region are its tiles' slices with their halos; a graph
split's loads and stores (:mod:`mcudeploy.passes.split_external`) are copies charged in both
regions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..ir import Node, Value
from ..plan.memory_plan import PlacedMemoryPlan

if TYPE_CHECKING:
    from ..plan.memory_plan import MemoryPlan

QUANT_BYTES_PER_CHANNEL = 12    # int32 bias + multiplier + shift per output channel


@dataclass(frozen=True)
class Access:
    """One memory access stream of a layer."""
    operand: str          # "weights", "input", "output", "parameters", ...
    value: str
    region: str
    bytes: float          # bytes moved by the kernel's loads / stores
    unique: int           # bytes of the tensor
    working_set: int      # bytes re-read between two uses of a byte
    write: bool = False


def _region(value: Value, plan: MemoryPlan) -> str:
    if value.is_constant:
        return plan.weights.get(value.name, "flash")
    placement = plan.tensors.get(value.name)
    if placement is not None:
        return placement.region
    return plan.placement.home_region if isinstance(plan, PlacedMemoryPlan) else "sram"


def _read(operand: str, value: Value, plan: MemoryPlan, moved: float, working_set: int | None = None) -> Access:
    return Access(operand, value.name, _region(value, plan), float(moved), value.nbytes,
                  value.nbytes if working_set is None else int(working_set))


def _write(value: Value, plan: MemoryPlan, moved: float | None = None) -> Access:
    return Access("output", value.name, _region(value, plan), float(value.nbytes if moved is None else moved),
                  value.nbytes, value.nbytes, write=True)


def _window_accesses(node: Node, features: dict, plan: MemoryPlan, blocked: bool, block: int) -> list[Access]:
    x, w, out = node.inputs[0], node.inputs[1], node.outputs[0]
    item = x.dtype.itemsize
    kernel_h, kernel_w, per_group = w.shape[1], w.shape[2], w.shape[3]
    pixels, macs = features["pixels"], features["macs"]
    depthwise = per_group == 1 and node.attrs.get("group", 1) > 1
    row_set = kernel_h * x.shape[2] * x.shape[3] * item        # the input rows one output row reads
    if not blocked:
        weights, inputs = macs, macs * item
    elif depthwise:
        weights, inputs = pixels * kernel_h * kernel_w * out.shape[3], macs * item
    else:
        weights = math.ceil(pixels / block) * w.nbytes
        inputs = pixels * kernel_h * kernel_w * per_group * item
    accesses = [_read("weights", w, plan, weights), _read("input", x, plan, inputs, row_set)]
    bias = node.inputs[2] if len(node.inputs) > 2 else None
    channels = out.shape[3]
    if bias is not None:
        accesses.append(Access("parameters", bias.name, _region(bias, plan),
                               features["outputs"] * QUANT_BYTES_PER_CHANNEL, channels * QUANT_BYTES_PER_CHANNEL,
                               channels * QUANT_BYTES_PER_CHANNEL))
    return accesses + [_write(out, plan)]


def _fully_connected_accesses(node: Node, features: dict, plan: MemoryPlan, blocked: bool) -> list[Access]:
    x, w, out = node.inputs[0], node.inputs[1], node.outputs[0]
    rows, macs = features["rows"], features["macs"]
    weights = rows * w.nbytes if blocked else macs
    accesses = [_read("weights", w, plan, weights),
                _read("input", x, plan, macs * x.dtype.itemsize / (2 if blocked else 1), x.shape[-1] * x.dtype.itemsize)]
    bias = node.inputs[2] if len(node.inputs) > 2 else None
    if bias is not None:
        accesses.append(_read("parameters", bias, plan, features["outputs"] * QUANT_BYTES_PER_CHANNEL,
                              bias.nbytes))
    return accesses + [_write(out, plan)]


def copy_in_place(node: Node, plan: MemoryPlan) -> bool:
    """True when ``node``'s output occupies the very bytes of its first input (a view, or a
    copy the plan made in place): same region, same offset. A concat slice or a graph split's
    store / load (another offset, or the other arena) is a real copy."""
    if not node.inputs or node.inputs[0] is None or node.inputs[0].is_constant or not node.outputs:
        return False
    source, out = plan.tensors.get(node.inputs[0].name), plan.tensors.get(node.outputs[0].name)
    return source is not None and out is not None and source.region == out.region and source.offset == out.offset


def input_bytes_moved(node: Node, value: Value) -> int:
    """Bytes of input ``value`` that ``node`` reads (the NPU's streams): a Slice reads only the
    part it copies (its output's size: a tile's rows + halo); any other node the whole tensor."""
    if node.op == "Slice" and node.inputs and value is node.inputs[0]:
        return node.outputs[0].size * value.dtype.itemsize
    return value.nbytes


def _streaming_accesses(node: Node, family: str, features: dict, plan: MemoryPlan, context: dict) -> list[Access]:
    out = node.outputs[0]
    inputs = [v for v in node.inputs if v is not None]
    if family in ("reshape", "concat"):
        if family == "reshape" and context.get("in_place"):
            return []
        return [*(_read("input", v, plan, v.nbytes) for v in inputs), _write(out, plan)]
    if family == "strided_slice":       # reads the rows it copies (a tile's stripe + halo), not the tensor
        moved = input_bytes_moved(node, inputs[0])
        return [_read("input", inputs[0], plan, moved, moved), _write(out, plan)]
    passes = 3 if family == "softmax" else 1
    reads = []
    for value in inputs:
        moved = (features.get("taps", 0) * value.dtype.itemsize if family in ("avg_pool", "max_pool")
                 else max(value.nbytes, out.size * value.dtype.itemsize if family in ("add", "mul") else value.nbytes))
        reads.append(_read("input" if not value.is_constant else "weights", value, plan, moved * passes))
    return reads + [_write(out, plan)]


def accesses_of(node: Node, family: str, features: dict, plan: MemoryPlan, traffic: str, block: int = 1,
                context: dict | None = None) -> list[Access]:
    """The operand streams of ``node`` run by kernel ``family`` (module docstring)."""
    blocked = traffic == "blocked"
    if family in ("conv2d", "depthwise_conv2d"):
        return _window_accesses(node, features, plan, blocked, max(1, block))
    if family == "fully_connected":
        return _fully_connected_accesses(node, features, plan, blocked)
    return _streaming_accesses(node, family, features, plan, context or {})
