"""Data movement on quantized tensors: the raw integers move unchanged (TFLite requires the
same scale and zero point in and out), except:

* Pad fills with ``zp_out`` when ``value == 0``, else with ``clamp(roundf(value / s) + zp)``;
* Concat copies inputs that share the output's quantization and requantizes the others with
  ``mbqm(X - zp_in, quantize_multiplier(s_in / s_out)) + zp_out`` (TFLM only copies; the
  converter always gives the inputs the output's parameters).

Axes are shifted by one for the run's leading batch axis.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...arithmetic import fixed_point as fp
from ...ir import Node
from ._common import per_tensor
from .registry import int_kernel


@dataclass(frozen=True)
class PadParams:
    """Prepared parameters of an integer Pad."""
    pad_value: int


@dataclass(frozen=True)
class ConcatParams:
    """Prepared parameters of an integer Concat."""
    requantize: tuple  # per input: None (copy) or (zp_in, multiplier, shift, zp_out)


def _reshape(node: Node, params, inputs: list) -> list[np.ndarray]:
    x = inputs[0]
    return [x.reshape((x.shape[0],) + node.outputs[0].shape)]


for _name in ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"):
    int_kernel(_name)(_reshape)


@int_kernel("Transpose")
def transpose(node: Node, params, inputs: list) -> list[np.ndarray]:
    return [inputs[0].transpose((0,) + tuple(p + 1 for p in node.attrs["perm"]))]


@int_kernel("Slice")
def slice_(node: Node, params, inputs: list) -> list[np.ndarray]:
    x = inputs[0]
    index = [slice(None)] * x.ndim
    rank = x.ndim - 1
    for start, end, axis, step in zip(*(node.attrs[k] for k in ("starts", "ends", "axes", "steps"))):
        selected = range(x.shape[1 + axis % rank])[slice(start, end, step)]
        index[1 + axis % rank] = slice(selected.start, selected.stop if selected.stop >= 0 else None,
                                       selected.step)
    return [x[tuple(index)]]


def prepare_pad(node: Node) -> PadParams:
    out = node.outputs[0]
    value = node.attrs["value"]
    scale, zero_point = per_tensor(node, out, "output")
    quantized = zero_point if value == 0 else fp.quantize_scalar_f32(value, float(scale), zero_point)
    info = np.iinfo(out.dtype.numpy)
    return PadParams(int(np.clip(quantized, info.min, info.max)))


@int_kernel("Pad", prepare=prepare_pad)
def pad(node: Node, params: PadParams, inputs: list) -> list[np.ndarray]:
    x = inputs[0]
    rank = x.ndim - 1
    pads, mode = node.attrs["pads"], node.attrs["mode"]
    width = [(0, 0)] + [(max(pads[i], 0), max(pads[i + rank], 0)) for i in range(rank)]
    if mode == "constant":
        padded = np.pad(x, width, constant_values=params.pad_value)
    else:
        padded = np.pad(x, width, mode="reflect" if mode == "reflect" else "edge")
    crop = [slice(None)] + [slice(-min(pads[i], 0), padded.shape[i + 1] + min(pads[i + rank], 0))
                            for i in range(rank)]
    return [padded[tuple(crop)]]


def prepare_concat(node: Node) -> ConcatParams:
    out = node.outputs[0]
    output_scale, output_zero_point = per_tensor(node, out, "output")
    plans: list[tuple[int, int, int, int] | None] = []
    for value in node.inputs:
        scale, zero_point = per_tensor(node, value, f"input {value.name!r}")
        if (scale, zero_point) == (output_scale, output_zero_point):
            plans.append(None)
        else:
            multiplier, shift = fp.quantize_multiplier(float(scale) / float(output_scale))
            plans.append((zero_point, multiplier, shift, output_zero_point))
    return ConcatParams(tuple(plans))


@int_kernel("Concat", prepare=prepare_concat)
def concat(node: Node, params: ConcatParams, inputs: list) -> list[np.ndarray]:
    batch = max(x.shape[0] for x in inputs)
    dtype = node.outputs[0].dtype.numpy
    info = np.iinfo(dtype)
    parts = []
    for x, plan in zip(inputs, params.requantize):
        x = np.broadcast_to(x, (batch,) + x.shape[1:])
        if plan is not None:
            zero_in, multiplier, shift, zero_out = plan
            scaled = fp.multiply_by_quantized_multiplier(fp.wrap_int32(x.astype(np.int64) - zero_in),
                                                         multiplier, shift) + zero_out
            x = np.clip(scaled, info.min, info.max).astype(dtype)
        parts.append(x)
    axis = 1 + node.attrs["axis"] % (inputs[0].ndim - 1)
    return [np.concatenate(parts, axis=axis)]
