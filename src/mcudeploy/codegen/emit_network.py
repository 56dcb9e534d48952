"""``network.h`` / ``network.c``: the network's API and its run function.

Input: the graph, the memory plan (:func:`mcudeploy.plan.memory_plan.plan_memory`: order,
arena regions and offsets of every tensor and scratch buffer, region of every constant),
the prepared parameters of every node (:func:`mcudeploy.reference.int_executor.prepare_graph`)
and the target. Output: the text of both files and the constant arrays for
``network_data.c``.

The arena is one static, aligned ``uint8_t`` array per plan region (no ``malloc``); a tensor
placed at ``offset`` in region ``R`` is ``network_arena_R + offset``. ``network_run`` copies
the inputs to their planned offsets, calls one runtime kernel per node in the plan's order
(:mod:`.kernel_calls`) and copies the outputs out. It returns 0, -1 for a NULL pointer, or
``1 + i`` when the kernel of layer ``i`` reports an error.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import UnsupportedError
from ..ir import Graph, Value, get_op
from .c_literals import c_float, c_type
from .identifiers import IdentifierTable, clean, comment_text, string_literal
from .kernel_calls import CallContext, ConstArray, KernelCall, emit_call
from . import kernel_ops, kernel_ops_data  # noqa: F401  (register the emitters)
from .templates import render

DTYPE_ENUM = {"int8": "NETWORK_DTYPE_INT8", "int16": "NETWORK_DTYPE_INT16",
              "int32": "NETWORK_DTYPE_INT32", "float32": "NETWORK_DTYPE_FLOAT32"}
MAX_RANK = 6


@dataclass
class Layer:
    index: int
    name: str
    op: str
    symbol: str
    call: KernelCall
    scratch: str       # declaration of the scratch context ("" = none)


class Arena:
    """The arena arrays (one per plan region) and the C pointer of every planned tensor."""

    def __init__(self, plan, alignment: int) -> None:
        self.plan = plan
        extents: dict[str, int] = {}
        for placement in [*plan.tensors.values(), *plan.scratch.values()]:
            extents[placement.region] = max(extents.get(placement.region, 0), placement.offset + placement.size)
        if len(extents) == 1:
            region = next(iter(extents))
            extents[region] = max(extents[region], int(plan.arena_bytes))
        self.sizes = {region: -(-size // alignment) * alignment or alignment
                      for region, size in sorted(extents.items())}
        self.symbols = {region: f"network_arena_{clean(region) or 'default'}" for region in self.sizes}
        self.sections = {region: f".bss.mcu_arena.{clean(region) or 'default'}" for region in self.sizes}

    def address(self, placement) -> str:
        return f"{self.symbols[placement.region]} + {placement.offset}"

    def tensor(self, value: Value) -> str:
        try:
            placement = self.plan.tensors[value.name]
        except KeyError:
            raise UnsupportedError(f"tensor {value.name!r} has no place in the memory plan; "
                                   "re-run the planner on this graph") from None
        return f"(({c_type(value.dtype.numpy)} *)({self.address(placement)}))"


def _layers(graph: Graph, plan, params: dict, arena: Arena, constants: IdentifierTable,
            weights_region: dict[str, str]) -> list[Layer]:
    nodes = {node.name: node for node in graph.nodes}
    symbols = IdentifierTable("layer", max_length=28)   # "layer3_conv2d_BiasAdd"
    layers = []

    def pointer(value: Value) -> str:
        return constants[value.name] if value.const is not None else arena.tensor(value)

    elided = set(getattr(plan, "elided_nodes", ()))   # the plan made them no-ops (concat in place)
    for name in (name for name in plan.order if name not in elided):
        index = len(layers)
        node = nodes[name]
        symbol = symbols[f"{index} {name}"]
        weight = next((v for v in node.inputs[1:] if v is not None and v.const is not None), None)
        region = weights_region.get(weight.name) if weight is not None else None
        placement = plan.scratch.get(name)
        scratch_declaration, scratch = "", "NULL"
        if placement is not None:
            scratch = f"&{symbol}_context"
            scratch_declaration = (f"static const mcu_context {symbol}_context = "
                                   f"{{{arena.address(placement)}, {placement.size}}};")
        context = CallContext(node, params[name], symbol, pointer,
                              region or next(iter(sorted(set(weights_region.values()))), "FLASH"), scratch)
        layers.append(Layer(index, name, node.op, symbol, emit_call(context), scratch_declaration))
    return layers


def _tensor_info(value: Value, arena: Arena) -> dict:
    quant = value.quant
    if len(value.shape) > MAX_RANK:
        raise UnsupportedError(f"graph input / output {value.name!r} has rank {len(value.shape)}; "
                               f"network_tensor_info holds up to {MAX_RANK}")
    per_tensor = quant is not None and not quant.per_channel
    return {"name": string_literal(value.name), "comment": comment_text(value.name),
            "rank": len(value.shape), "shape": list(value.shape) + [0] * (MAX_RANK - len(value.shape)),
            "dtype": DTYPE_ENUM[str(value.dtype)], "ctype": c_type(value.dtype.numpy),
            "scale": c_float(quant.scale.reshape(-1)[0]) if per_tensor else "0.0f",
            "zero_point": int(quant.zero_point.reshape(-1)[0]) if per_tensor else 0,
            "bytes": value.nbytes, "address": arena.address(arena.plan.tensors[value.name])}


def _check_io(graph: Graph) -> None:
    for value in graph.outputs:
        if value.const is not None or value.producer is None:
            raise UnsupportedError(f"graph output {value.name!r} is a constant or a graph input; "
                                   "C code needs every output computed by a node")


def render_network(graph: Graph, plan, params: dict, constants: IdentifierTable, alignment: int,
                   model: str) -> tuple[dict[str, str], list[ConstArray], list[str], dict[str, str]]:
    """The text of ``network.h`` / ``network.c``, the requantization arrays the calls need,
    the runtime source files (sorted) they use and the arena section of every plan region."""
    _check_io(graph)
    arena = Arena(plan, alignment)
    layers = _layers(graph, plan, params, arena, constants, dict(plan.weights))
    macc = sum(int(get_op(node.op).macc(node)) for node in graph.nodes)
    context = {
        "model": comment_text(model), "alignment": alignment, "macc": macc, "max_rank": MAX_RANK,
        "arenas": [{"region": comment_text(r), "symbol": arena.symbols[r], "bytes": size,
                    "macro": f"NETWORK_ARENA_{clean(r).upper() or 'DEFAULT'}_BYTES",
                    "section": arena.sections[r]} for r, size in arena.sizes.items()],
        "arena_bytes": sum(arena.sizes.values()),
        "inputs": [_tensor_info(v, arena) for v in graph.inputs],
        "outputs": [_tensor_info(v, arena) for v in graph.outputs],
        "layers": [{"index": layer.index, "name": string_literal(layer.name), "comment": comment_text(layer.name),
                    "op": layer.op, "declarations": layer.call.declarations, "call": layer.call.call,
                    "scratch": layer.scratch, "scratch_size": layer.call.scratch_size,
                    "scratch_bytes": plan.scratch[layer.name].size if layer.scratch else 0}
                   for layer in layers],
    }
    files = {"network.h": render("network.h.j2", context), "network.c": render("network.c.j2", context)}
    arrays = [array for layer in layers for array in layer.call.arrays]
    sources = sorted({source for layer in layers for source in layer.call.sources})
    return files, arrays, sources, dict(arena.sections)
