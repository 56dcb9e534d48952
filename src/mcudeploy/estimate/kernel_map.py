"""Which kernel runs a node, per runtime: the key of its instruction model.

Input: an IR node (deployed graph, NHWC) and a runtime profile name. Output: a kernel key
``family[_s16]`` (``family`` is a :data:`.features.FAMILIES` name), or ``None`` when the
runtime has no kernel for the node (then the estimate of that layer is marked unknown).

* ``mcudeploy``: the C function the code generator calls (``codegen/kernel_ops*.py``):
  a Conv is depthwise when its weights have one channel and ``group == C > 1``.
* ``cmsis-nn``: the CMSIS-NN function the library's own wrappers choose
  (``arm_convolve_wrapper_s8``: a 1x1 kernel without top / left padding or dilation ->
  ``convolve_1x1_fast`` at stride 1, else ``convolve_1x1``; a 1xN kernel on a height-1 input
  with ``stride_w x C % 4 == 0`` -> ``convolve_1_x_n``; else ``convolve``; ``arm_depthwise_conv_wrapper_s8``: multiplier 1, batch 1, no dilation ->
  ``depthwise_3x3`` (3x3, padding <= 1, not on Helium) or ``depthwise_opt``, else
  ``depthwise``), with the same feature families as ours.
"""
from __future__ import annotations

from ..ir import Node

MCUDEPLOY_FAMILIES = {
    "ConvTranspose": "transpose_conv2d", "Gemm": "fully_connected", "MatMul": "fully_connected",
    "Add": "add", "Sub": "add", "Mul": "mul", "AveragePool": "avg_pool", "MaxPool": "max_pool",
    "ReduceMean": "mean", "Softmax": "softmax", "Sigmoid": "smooth_step", "Tanh": "smooth_step",
    "HardSwish": "hard_swish", "LeakyRelu": "leaky_relu", "QuantizeLinear": "quantize",
    "DequantizeLinear": "dequantize", "Reshape": "reshape", "Flatten": "reshape", "Squeeze": "reshape",
    "Unsqueeze": "reshape", "Identity": "reshape", "Dropout": "reshape", "Transpose": "transpose",
    "Slice": "strided_slice", "Pad": "pad", "Concat": "concat", "Resize": "resize",
    "ConvAccumulate": "conv_accumulate", "RequantizeAccumulator": "requantize_accumulator",
}
# Kernels with loop features but no measured fit yet, counted with the fit of a kernel whose loop
# nest they share (said in the layer's notes): the accumulate is mcu_conv2d_s8's loops with an
# int32 load-add-store per output instead of the requantization, and without its type-generic
# loads (an upper bound: +64 % on a 3x3 64 -> 32 conv in 4 groups on 16x16, QEMU M4); the
# requantize is one mbqm + clamp per element, as mcu_leaky_relu_s8 (-23 % on that layer). Add
# samples of them to tools/instruction_samples.py and re-run tools/fit_instruction_model.py to
# measure them instead.
# The one-pass element-wise kernels nobody measured (quantize: a multiply, round and clamp per
# element; dequantize: a subtract and multiply; transpose / strided slice / resize / pad: an index
# computation, a load and a store) are counted as mcu_leaky_relu_s8, the measured one-pass kernel
# of the same loop nest (NHWC levels, one load, a little arithmetic, one store per element).
UNMEASURED_PROXIES = {"conv_accumulate": "conv2d", "requantize_accumulator": "leaky_relu",
                      **{kernel: "leaky_relu" for kernel in ("quantize", "dequantize", "transpose", "strided_slice",
                                                             "resize", "pad")}}
# CMSIS-NN functions by family (the wrappers' choice for Conv is made in cmsis_conv_family)
CMSIS_FAMILIES = {
    "Gemm": "fully_connected", "MatMul": "fully_connected", "Add": "add", "Sub": "add", "Mul": "mul",
    "AveragePool": "avg_pool", "MaxPool": "max_pool", "Softmax": "softmax", "Reshape": "reshape",
    "Flatten": "reshape", "Squeeze": "reshape", "Unsqueeze": "reshape", "Identity": "reshape",
    "Concat": "concat", "ReduceMean": "mean", "Transpose": "transpose", "Pad": "pad",
}
CMSIS_ALIASES = {   # CMSIS-NN kernel -> the feature family it shares
    "convolve_1x1_fast": "conv2d", "convolve_1x1": "conv2d", "convolve_1_x_n": "conv2d",
    "convolve": "conv2d", "depthwise_3x3": "depthwise_conv2d", "depthwise_opt": "depthwise_conv2d",
    "depthwise": "depthwise_conv2d",
}


def is_depthwise(node: Node) -> bool:
    x, w = node.inputs[0], node.inputs[1]
    group = node.attrs.get("group", 1)
    return w.shape[3] == 1 and group == x.shape[3] and group > 1


def _suffix(node: Node) -> str:
    value = node.inputs[0] if node.inputs and node.inputs[0] is not None else node.outputs[0]
    return "_s16" if str(value.dtype) == "int16" else ""


def mcudeploy_kernel(node: Node) -> str | None:
    if node.op == "Conv":
        family: str | None = "depthwise_conv2d" if is_depthwise(node) else "conv2d"
    else:
        family = MCUDEPLOY_FAMILIES.get(node.op)
    return None if family is None else family + _suffix(node)


def cmsis_conv_family(node: Node, helium: bool) -> str:
    """The CMSIS-NN kernel the wrappers pick for a Conv (module docstring)."""
    x, w, out = node.inputs[0], node.inputs[1], node.outputs[0]
    strides, pads, dilations = node.attrs["strides"], node.attrs["pads"], node.attrs["dilations"]
    kernel_h, kernel_w = w.shape[1:3]
    if is_depthwise(node):
        multiplier = out.shape[3] // x.shape[3]
        if multiplier == 1 and x.shape[0] == 1 and tuple(dilations) == (1, 1):
            if not helium and (kernel_h, kernel_w) == (3, 3) and max(pads[:2]) <= 1:
                return "depthwise_3x3"
            return "depthwise_opt"
        return "depthwise"
    grouped = w.shape[3] != x.shape[3]
    if (kernel_h, kernel_w) == (1, 1) and tuple(dilations) == (1, 1) and not any(pads[:2]) and not grouped:
        return "convolve_1x1_fast" if tuple(strides) == (1, 1) else "convolve_1x1"
    if x.shape[1] == 1 and kernel_h == 1 and dilations[1] == 1 and (strides[1] * x.shape[3]) % 4 == 0 \
            and not grouped:
        return "convolve_1_x_n"
    return "convolve"


def cmsis_kernel(node: Node, helium: bool) -> str | None:
    if _suffix(node):
        return None    # int16 CMSIS-NN kernels are not measured
    if node.op == "Conv":
        return cmsis_conv_family(node, helium)
    # no CMSIS-NN function: TFLite Micro runs its reference kernel (lookup counts it as ours)
    return CMSIS_FAMILIES.get(node.op) or mcudeploy_kernel(node)


def kernel_of(node: Node, runtime: str, helium: bool = False) -> str | None:
    """The kernel key of ``node`` under ``runtime`` (module docstring)."""
    if runtime == "cmsis-nn":
        return cmsis_kernel(node, helium)
    return mcudeploy_kernel(node)


def feature_family(kernel: str) -> str:
    """The :data:`.features.FAMILIES` entry of a kernel key."""
    base = kernel.removesuffix("_s16")
    return CMSIS_ALIASES.get(base, base)
