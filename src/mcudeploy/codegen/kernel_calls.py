"""One C runtime call per IR node, as text: the same mapping the runtime's bit-exact tests
use (``runtime/tests/c_runners.py``), written out instead of called through ctypes.

Input: a node (NHWC, quantized), its parameters from the Python integer kernel's
``prepare`` (:func:`mcudeploy.reference.int_executor.prepare_graph`) and a
:class:`CallContext` that knows the C expression of every tensor pointer (from the memory
plan) and the region of the node's weights. Output: a :class:`KernelCall`: ``static const``
struct definitions, per-channel requantization arrays for ``network_data.c``, the call
expression (returns ``mcu_status``) and the runtime sources it needs. Nothing is decided
here: every number is copied from the prepared parameters or the node's attributes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..errors import UnsupportedError
from ..ir import Node, Value
from ..kernels.emitted_arrays import call_arrays
from .abi import Struct, c_initializer, struct
from .kernel_table import PAD_MODES, SUFFIX, kernel_function, params_struct, quant_struct, suffix  # noqa: F401


@dataclass
class ConstArray:
    """A ``const`` array for ``network_data.c``: symbol, values (their dtype is the C type),
    the plan's region for it, and a comment naming what it is."""
    symbol: str
    values: np.ndarray
    region: str
    comment: str


@dataclass
class KernelCall:
    declarations: list[str] = field(default_factory=list)
    arrays: list[ConstArray] = field(default_factory=list)
    call: str = ""
    sources: tuple[str, ...] = ()
    scratch_size: str = ""   # C expression of the scratch bytes the call needs ("" = none)


@dataclass
class CallContext:
    """What an emitter may ask: the node's identifier, pointers to tensors and the region of
    the node's requantization arrays (the plan's region of its weights)."""
    node: Node
    params: Any
    symbol: str                                  # e.g. node_conv1
    pointer: Callable[[Value], str]              # C expression of a tensor's data pointer
    data_region: str
    scratch: str = "NULL"                        # C expression of the node's mcu_context *
    overrides: dict[int, str] = field(default_factory=dict)   # input index -> pointer (variant constants)
    out_channel_stride: int = 0   # the plan's c_stride of output 0 (a channel slice of a concat), 0 = dense

    def dims(self, shape: tuple[int, ...], c_stride: int = 0) -> str:
        """``{.n = .., .h = .., .w = .., .c = .., .c_stride = ..}``: every field written."""
        if len(shape) > 4:
            raise UnsupportedError(f"node {self.node.name!r} ({self.node.op}): rank-{len(shape)} tensor; "
                                   "the C runtime takes tensors of rank <= 4")
        n, h, w, c = (1,) * (4 - len(shape)) + tuple(int(s) for s in shape)
        return c_initializer(struct("mcu_dims", n=n, h=h, w=w, c=c, c_stride=int(c_stride)))

    def declare(self, call: KernelCall, ctype: str, suffix: str, body: str) -> str:
        """Add ``static const <ctype> <symbol>_<suffix> = <body>;`` and return ``&symbol``."""
        name = f"{self.symbol}_{suffix}"
        call.declarations.append(f"static const {ctype} {name} = {body};")
        return f"&{name}"

    def declare_struct(self, call: KernelCall, suffix: str, struct: Struct) -> str:
        """Declare the table's ``struct`` as ``<symbol>_<suffix>``; return ``&symbol``."""
        return self.declare(call, struct.ctype, suffix, c_initializer(struct))

    def quant(self, call: KernelCall) -> str:
        """``&<symbol>_quant``: the node's quantization struct from :mod:`.kernel_table`."""
        struct = quant_struct(self.node, self.params)
        assert struct is not None, f"{self.node.op} has no quantization struct in the kernel table"
        return self.declare_struct(call, "quant", struct)

    def params_ref(self, call: KernelCall) -> str:
        """``&<symbol>_params``: the node's parameter struct from :mod:`.kernel_table`."""
        struct = params_struct(self.node, self.params)
        assert struct is not None, f"{self.node.op} has no parameter struct in the kernel table"
        return self.declare_struct(call, "params", struct)

    def dims_ref(self, call: KernelCall, suffix: str, shape: tuple[int, ...]) -> str:
        return self.declare(call, "mcu_dims", suffix, self.dims(shape))

    def out_dims_ref(self, call: KernelCall, shape: tuple[int, ...]) -> str:
        """``&<symbol>_out_dims`` with the plan's channel stride of the output (emit_network
        sets one only where the chosen kernel honours it, kernels/strided_output.py)."""
        return self.declare(call, "mcu_dims", "out_dims", self.dims(shape, self.out_channel_stride))

    def int_array(self, call: KernelCall, suffix: str, values, what: str) -> str:
        symbol = f"{self.symbol}_{suffix}"
        array = np.ascontiguousarray(np.asarray(values, dtype=np.int32).reshape(-1))
        call.arrays.append(ConstArray(symbol, array, self.data_region, f"{what} of {self.node.name}"))
        return symbol


EMITTERS: dict[str, Callable[[CallContext], KernelCall]] = {}


def emitter(*ops: str, sources: tuple[str, ...]):
    """Register the decorated ``emit(context, call)`` for ``ops``; it fills ``call``."""
    def register(function: Callable[[CallContext, KernelCall], None]):
        def emit(context: CallContext) -> KernelCall:
            call = KernelCall(sources=sources)
            function(context, call)
            return call
        for op in ops:
            EMITTERS[op] = emit
        return function
    return register


def emit_call(context: CallContext) -> KernelCall:
    """The :class:`KernelCall` of ``context.node``; :class:`UnsupportedError` if none."""
    node = context.node
    if node.op not in EMITTERS:
        raise UnsupportedError(f"node {node.name!r}: op {node.op} has no C runtime kernel; "
                               f"C code can be generated for {', '.join(sorted(EMITTERS))}")
    return EMITTERS[node.op](context)




def bias_pointer(context: CallContext) -> str:
    if 2 in context.overrides:
        return context.overrides[2]
    inputs = context.node.inputs
    return context.pointer(inputs[2]) if len(inputs) > 2 and inputs[2] is not None else "NULL"


def check_wide(context: CallContext) -> bool:
    """Whether a Conv / ConvTranspose / Gemm runs 16x8 (its prepared parameters, a
    ``ConvParams`` / ``FullyConnectedParams``, say which accumulator it needs)."""
    wide = suffix(context.node.inputs[0]) == "s16"
    if wide and not context.params.int64_accumulator:
        raise UnsupportedError(f"node {context.node.name!r}: 16x8 with an int32 bias (int32 "
                               "accumulator) has no C kernel")
    return wide


def channel_quant(context: CallContext, call: KernelCall, kind: str = "mcu_channel_quant") -> str:
    p = context.params
    arrays = call_arrays(context.node, p)      # the listing the ledger counts (kernels/emitted_arrays.py)
    multiplier = context.int_array(call, "multiplier", arrays["multiplier"], "output multipliers")
    shift = context.int_array(call, "shift", arrays["shift"], "output shifts")
    offsets = {"input_offset": int(p.input_offset), "output_offset": int(p.output_offset)}
    if kind == "mcu_fc_quant":
        offsets["weights_offset"] = int(p.weights_offset)
    return context.declare_struct(call, "quant", struct(kind, **offsets, multiplier=multiplier, shift=shift))


def in_out(context: CallContext, call: KernelCall, index: int = 0) -> tuple[str, str, str, str]:
    """``(&in_dims, in, &out_dims, out)`` for input ``index`` and output 0."""
    node = context.node
    x, y = node.inputs[index], node.outputs[0]
    return (context.dims_ref(call, f"in{index}_dims", x.shape), context.pointer(x),
            context.out_dims_ref(call, y.shape), context.pointer(y))


# -- two call shapes many kernels share -------------------------------------------------------
def quant_in_out_call(context: CallContext, call: KernelCall) -> None:
    """``function(NULL, &quant, &in_dims, x, &out_dims, y)`` (softmax, activations, log-softmax)."""
    quant = context.quant(call)
    in_dims, in_pointer, out_dims, out_pointer = in_out(context, call)
    call.call = f"{kernel_function(context.node)}(NULL, {quant}, {in_dims}, {in_pointer}, {out_dims}, {out_pointer})"


def params_itemsize_in_out_call(context: CallContext, call: KernelCall) -> None:
    """``function(NULL, &params, itemsize, &in_dims, x, &out_dims, y)`` (the data movers)."""
    x, y = context.node.inputs[0], context.node.outputs[0]
    params = context.params_ref(call)
    call.call = (f"{kernel_function(context.node)}(NULL, {params}, {x.dtype.itemsize}, "
                 f"{context.dims_ref(call, 'in0_dims', x.shape)}, {context.pointer(x)}, "
                 f"{context.out_dims_ref(call, y.shape)}, {context.pointer(y)})")
