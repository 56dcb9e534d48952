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

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..errors import UnsupportedError
from ..ir import Graph, Node, Value, get_op
from . import kernel_ops, kernel_ops_accumulate, kernel_ops_data, kernel_ops_math  # noqa: F401  (register the emitters)
from .abi import c_initializer, struct
from .c_literals import c_float, c_type
from .identifiers import IdentifierTable, clean, comment_text, string_literal
from .kernel_calls import CallContext, ConstArray, KernelCall, emit_call
from .templates import render

if TYPE_CHECKING:
    from ..deployment import Deployment
    from ..plan.memory_plan import PlacedMemoryPlan, TensorPlacement

DTYPE_ENUM = {"int8": "NETWORK_DTYPE_INT8", "int16": "NETWORK_DTYPE_INT16",
              "int32": "NETWORK_DTYPE_INT32", "float32": "NETWORK_DTYPE_FLOAT32",
              "uint8": "NETWORK_DTYPE_UINT8"}
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

    def __init__(self, plan: PlacedMemoryPlan, alignment: int) -> None:
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
        # a graph split's external arena gets its own section family, so that a board's linker
        # script can send it to external RAM (boards/<board>.ld: .bss.mcu_external*)
        external = plan.placement.external_region
        self.sections = {region: f".bss.mcu_{'external' if region == external else 'arena'}."
                                 f"{clean(region) or 'default'}" for region in self.sizes}

    def address(self, placement: TensorPlacement) -> str:
        return f"{self.symbols[placement.region]} + {placement.offset}"

    def tensor(self, value: Value) -> str:
        try:
            placement = self.plan.tensors[value.name]
        except KeyError:
            raise UnsupportedError(f"tensor {value.name!r} has no place in the memory plan; "
                                   "re-run the planner on this graph") from None
        return f"(({c_type(value.dtype.numpy)} *)({self.address(placement)}))"


def _with_variant(call: KernelCall, variant, symbol: str, node: Node) -> KernelCall:
    """The call of the chosen kernel variant: same arguments, the variant's function name
    (``mcu_conv2d_s8`` -> ``mcu_conv2d_s8<suffix>``, the suffix for ``node`` when the variant
    has one per node), its extra sources and its scratch check for ``network_init``."""
    suffix = variant.function_suffix_of(node) if variant.function_suffix_of is not None else variant.function_suffix
    if not suffix:
        return call
    function, bracket, arguments = call.call.partition("(")
    scratch_size = variant.scratch_check(symbol) if variant.scratch_check is not None else call.scratch_size
    return replace(call, call=f"{function}{suffix}{bracket}{arguments}",
                   sources=tuple(sorted(set(call.sources) | set(variant.sources))), scratch_size=scratch_size)


def _transfer_call(transfer, arena: Arena) -> KernelCall:
    """A copy the plan placed between the two arenas: the ``network_copy`` hook (network.h)."""
    destination = arena.address(arena.plan.tensors[transfer.destination])
    source = arena.address(arena.plan.tensors[transfer.source])
    offset = f" + {transfer.source_offset}" if transfer.source_offset else ""
    return KernelCall(call=f"(network_copy({destination}, {source}{offset}, {transfer.bytes}u), MCU_OK)")


def variant_headers(deployment: Deployment) -> list[str]:
    """The runtime headers (relative to ``runtime/``) the chosen kernel variants need, sorted."""
    return sorted({header for node in deployment.graph.nodes
                   for header in deployment.kernels.variant(node).headers})


def _layers(deployment: Deployment, arena: Arena, constants: IdentifierTable,
            overrides: dict[str, dict[int, str]], client_arenas: bool = False) -> list[Layer]:
    graph, plan, params = deployment.graph, deployment.plan, deployment.params
    weights_region = dict(plan.weights)
    nodes = {node.name: node for node in graph.nodes}
    symbols = IdentifierTable("layer", max_length=28)   # "layer3_conv2d_BiasAdd"
    layers: list[Layer] = []

    def pointer(value: Value) -> str:
        return constants[value.name] if value.const is not None else arena.tensor(value)

    elided = set(plan.elided_nodes)   # the plan made them no-ops (concat in place)
    transfers = plan.transfers        # the plan's copies across arenas (graph split)
    for name in (name for name in plan.order if name not in elided):
        index = len(layers)
        node = nodes[name]
        symbol = symbols[f"{index} {name}"]
        if name in transfers:
            layers.append(Layer(index, name, node.op, symbol, _transfer_call(transfers[name], arena), ""))
            continue
        weight = next((v for v in node.inputs[1:] if v is not None and v.const is not None), None)
        region = weights_region.get(weight.name) if weight is not None else None
        scratch, scratch_declaration = _scratch_context(plan.scratch.get(name), arena, symbol, client_arenas)
        replaced = overrides.get(name, {})
        by_value = {node.inputs[i].name: symbol for i, symbol in replaced.items()
                    if i < len(node.inputs) and node.inputs[i] is not None}
        context = CallContext(node, params[name], symbol,
                              _pointer_with(by_value, pointer),
                              region or next(iter(sorted(set(weights_region.values()))), "FLASH"), scratch,
                              overrides=dict(replaced), out_channel_stride=_channel_stride(deployment, node))
        call = _with_variant(emit_call(context), deployment.kernels.variant(node), symbol, node)
        layers.append(Layer(index, name, node.op, symbol, call, scratch_declaration))
    return layers


def _scratch_context(placement, arena: Arena, symbol: str, client_arenas: bool) -> tuple[str, str]:
    """``(mcu_context * expression, its static declaration or "")`` of a node's scratch."""
    if placement is None:
        return "NULL", ""
    value = c_initializer(struct("mcu_context", buffer=arena.address(placement), size=placement.size))
    if client_arenas:          # an arena set at run time: no static initialiser
        return f"&(mcu_context){value}", ""
    return f"&{symbol}_context", f"static const mcu_context {symbol}_context = {value};"


def _channel_stride(deployment: Deployment, node) -> int:
    """The plan's c_stride of ``node``'s output (0 = dense); a plan that gives one to a
    kernel that does not honour it is a bug, stopped here rather than in the C."""
    stride = deployment.plan.channel_strides.get(node.outputs[0].name, 0) if node.outputs else 0
    refusal = deployment.kernels.strided_output_refusal(node) if stride else None
    if refusal:
        raise AssertionError(f"memory plan: {node.name!r} writes a channel slice, but {refusal}")
    return stride


def _edge_note(value: Value) -> str:
    """How the network converts a graph input / output at its edge, for ``network.h``: a
    float or uint8 input quantized (or requantized) to the integer type the layers compute
    in, an output dequantized (or requantized) from it."""
    def params(other: Value) -> str:
        quant = other.quant
        return (f"{other.dtype}, scale {np.float32(quant.scale.reshape(-1)[0])!s}, zero point "
                f"{int(quant.zero_point.reshape(-1)[0])}" if quant is not None and not quant.per_channel
                else str(other.dtype))
    edges = ("QuantizeLinear", "DequantizeLinear")
    readers = [user for user, _ in value.uses if user.op in edges]
    if value.producer is None and readers and len(readers) == len(value.uses):
        return f"; converted by the network to {params(readers[0].outputs[0])}"
    if value.producer is not None and value.producer.op in edges:
        return f"; converted by the network from {params(value.producer.inputs[0])}"
    return ""


def _pointer_with(by_value: dict[str, str], pointer: Callable[[Value], str]) -> Callable[[Value], str]:
    """``pointer``, except for the tensors ``by_value`` names (a layer's overridden inputs)."""
    return lambda value: by_value.get(value.name) or pointer(value)


def _tensor_info(value: Value, arena: Arena) -> dict:
    quant = value.quant
    if len(value.shape) > MAX_RANK:
        raise UnsupportedError(f"graph input / output {value.name!r} has rank {len(value.shape)}; "
                               f"network_tensor_info holds up to {MAX_RANK}")
    if str(value.dtype) not in DTYPE_ENUM:
        raise UnsupportedError(f"graph input / output {value.name!r} is {value.type_str()}; the "
                               f"generated API takes {', '.join(DTYPE_ENUM)} tensors")
    per_tensor = quant is not None and not quant.per_channel and value.dtype.is_integer
    meaning = ("real = scale * (q - zero_point)" if per_tensor else
               "real values" if value.dtype.is_float else "raw integers")
    return {"name": string_literal(value.name), "comment": comment_text(value.name),
            "rank": len(value.shape), "shape": list(value.shape) + [0] * (MAX_RANK - len(value.shape)),
            "dtype": DTYPE_ENUM[str(value.dtype)], "ctype": c_type(value.dtype.numpy),
            "scale": c_float(quant.scale.reshape(-1)[0]) if per_tensor and quant is not None else "0.0f",
            "zero_point": int(quant.zero_point.reshape(-1)[0]) if per_tensor and quant is not None else 0,
            "description": comment_text(f"{value.type_str()}, {meaning}{_edge_note(value)}"),
            "bytes": value.nbytes, "address": arena.address(arena.plan.tensors[value.name])}


def _check_io(graph: Graph) -> None:
    for value in graph.outputs:
        if value.const is not None or value.producer is None:
            raise UnsupportedError(f"graph output {value.name!r} is a constant or a graph input; "
                                   "C code needs every output computed by a node")


def _region_capacity(deployment: Deployment, region: str) -> int | None:
    """Bytes the arena may take in ``region`` (the ledger's capacity), None without a target."""
    return deployment.plan.placement.capacity.get(region)


def render_network(deployment: Deployment, constants: IdentifierTable, overrides: dict[str, dict[int, str]] | None = None,
                   *, client_arenas: bool = False
                   ) -> tuple[dict[str, str], list[ConstArray], list[str], dict[str, str]]:
    """The text of ``network.h`` / ``network.c``, the requantization arrays the calls need,
    the runtime source files (sorted) they use and the arena section of every plan region.
    ``overrides``: node -> input index -> symbol of the array its kernel variant reads there
    (:mod:`.variant_constants`). ``client_arenas``: the application gives the arena buffers
    (``network_set_arena``, the ST client APIs' activations: :mod:`.client_api`) instead of
    the static arrays."""
    graph, plan, alignment = deployment.graph, deployment.plan, deployment.options.alignment
    model = deployment.name
    _check_io(graph)
    arena = Arena(plan, alignment)
    layers = _layers(deployment, arena, constants, overrides or {}, client_arenas)
    macc = sum(int(get_op(node.op).macc(node)) for node in graph.nodes)
    context = {
        "model": comment_text(model), "alignment": alignment, "macc": macc, "max_rank": MAX_RANK,
        "client_arenas": client_arenas,
        "arenas": [{"region": comment_text(r), "symbol": arena.symbols[r], "bytes": size,
                    "macro": f"NETWORK_ARENA_{clean(r).upper() or 'DEFAULT'}_BYTES",
                    "section": arena.sections[r], "capacity": _region_capacity(deployment, r)}
                   for r, size in arena.sizes.items()],
        "arena_bytes": sum(arena.sizes.values()),
        "transfers": len(plan.transfers),
        "variant_headers": [header.rsplit("/", 1)[-1] for header in variant_headers(deployment)
                            if header.startswith("include/")],
        "inputs": [_tensor_info(v, arena) for v in graph.inputs],
        "outputs": [_tensor_info(v, arena) for v in graph.outputs],
        "layers": [{"index": layer.index, "name": string_literal(layer.name), "comment": comment_text(layer.name),
                    "op": layer.op, "declarations": layer.call.declarations, "call": layer.call.call,
                    "scratch": layer.scratch, "scratch_size": layer.call.scratch_size,
                    "scratch_bytes": plan.scratch[layer.name].size if layer.name in plan.scratch else 0}
                   for layer in layers],
    }
    files = {"network.h": render("network.h.j2", context), "network.c": render("network.c.j2", context)}
    arrays = [array for layer in layers for array in layer.call.arrays]
    sources = sorted({source for layer in layers for source in layer.call.sources})
    return files, arrays, sources, dict(arena.sections)
