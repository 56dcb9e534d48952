"""What a data file holds, judged against a model's inputs: ``mcudeploy data check``.

Input: a model graph (as imported) and the arrays of a data file (:func:`~.data_files.read_arrays`).
Output: one :class:`InputReport` per model input — the key that feeds it, the data's shape and
dtype against the input's, the layout verdict, the value range, what that range looks like,
the share of values the quantized input cannot represent, and the preprocessing mcudeploy
applies (none: arrays are fed as they are) — plus the problems that would make ``run``,
``validate`` or ``quantize`` refuse the file (:func:`~.data_files.check_arrays`'s rules).

Layout: when the data's shape is the input's with the channel axis moved (``[N,H,W,C]`` data for
an ``[1,C,H,W]`` NCHW input, or the other way), the verdict names the transpose that fixes it.

Range, for float data (``lo``, ``hi`` the minimum and maximum):

* ``0 <= lo`` and ``1.5 < hi <= 255``: raw 8-bit pixels. A float model does not say whether it
  was trained on them (MLPerf Tiny's ResNet-8 was) or on scaled ones: the verdict says both,
  unless the model says it - a first op scaling the input (a Keras ``Rescaling``), or a
  quantized input whose range holds 0..255 (it was calibrated on raw pixels);
* within ``[0, 1]``: scaled to [0, 1]; within ``[-1, 1]`` with ``lo < 0``: scaled to [-1, 1];
* mean within 0.25 of 0 and standard deviation within [0.5, 2]: standardised (mean / std).

Clipping: a quantized input (an integer input with scale ``s`` and zero point ``z``, or a float
input read only by a QuantizeLinear, as in a QDQ model) represents ``[(q_min - z) s, (q_max - z) s]``;
values outside it saturate. The report gives the clipped share, and a hint above 1 %.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .data_files import UNNAMED_KEY, layout_mismatch
from .ir import DType, Graph, QuantParams, Value
from .ir.layout import image_layout

CLIP_HINT_SHARE = 0.01
RAW_PIXELS = "raw 8-bit pixels (0..255)"
_INTEGER_RANGES = {DType.INT8: (-128, 127), DType.UINT8: (0, 255), DType.INT16: (-32768, 32767)}


@dataclass
class InputReport:
    """The data for one model input, and what is right or wrong with it."""
    name: str
    model_type: str                  # e.g. float32[1,3,128,128]
    model_layout: str | None
    key: str | None = None           # the data file's key that feeds this input
    data_shape: tuple[int, ...] | None = None
    data_dtype: str | None = None
    samples: int | None = None
    layout: str = "unknown"          # the verdict in words
    value_range: tuple[float, float, float, float] | None = None   # min, max, mean, std
    looks_like: str | None = None
    representable: tuple[float, float] | None = None
    clipped_share: float | None = None
    problems: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)


def input_quantization(graph: Graph, value: Value) -> tuple[QuantParams, DType] | None:
    """The quantization the input is stored with: its own (integer input) or that of the one
    QuantizeLinear reading it (a float input of a QDQ model)."""
    if value.quant is not None and value.dtype in _INTEGER_RANGES:
        return value.quant, value.dtype
    users = value.users
    if value.dtype.is_float and len(users) == 1 and users[0].op == "QuantizeLinear":
        out = users[0].outputs[0]
        if out.quant is not None and out.dtype in _INTEGER_RANGES:
            return out.quant, out.dtype
    return None


def _representable(quant: QuantParams, dtype: DType) -> tuple[float, float]:
    q_min, q_max = _INTEGER_RANGES[dtype]
    scale, zero = float(quant.scale.min()), int(quant.zero_point[0])
    return (q_min - zero) * scale, (q_max - zero) * scale


def _looks_like(low: float, high: float, mean: float, std: float) -> str | None:
    """What a float range suggests about the preprocessing (module docstring)."""
    if 0 <= low and 1.5 < high <= 255:
        return (f"{RAW_PIXELS}: a float model trained on scaled data needs them scaled (e.g. /255); one trained "
                "on raw pixels (MLPerf Tiny's ResNet-8) takes them as they are: check how the training data was fed")
    if 0 <= low and high <= 1:
        return "scaled to [0, 1]"
    if -1 <= low < 0 and high <= 1:
        return "scaled to [-1, 1]"
    if abs(mean) <= 0.25 and 0.5 <= std <= 2:
        return "standardised (mean 0, standard deviation 1: (x - mean) / std)"
    return None


def input_scaling(value: Value) -> float | None:
    """The factor the model multiplies its input by first, when it does (a Keras ``Rescaling``,
    an exported ``x * (1/255)``): the one reader of the input is a Mul by a scalar constant."""
    users = value.users
    if len(users) != 1 or users[0].op != "Mul":
        return None
    constants = [v for v in users[0].inputs if v.is_constant and v.const is not None and np.size(v.const) == 1]
    return float(np.asarray(constants[0].const).reshape(())) if constants else None


def _sample_shape(data_shape: tuple[int, ...], model_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The per-sample shape of the data with the sample axis removed, by the rules of
    :func:`~.data_files.check_array`, or ``None`` when the data has no recognisable layout."""
    if data_shape == model_shape:
        return model_shape
    if len(data_shape) == len(model_shape) + 1:
        return data_shape[1:]
    if model_shape and model_shape[0] == 1 and len(data_shape) == len(model_shape):
        return (1, *data_shape[1:])
    return None


def _layout_verdict(report: InputReport, value: Value, data_shape: tuple[int, ...]) -> None:
    model_shape = value.shape
    if _sample_shape(data_shape, model_shape) == model_shape:
        report.layout = f"matches the model ({report.model_layout or 'shape'} {list(model_shape)})"
        return
    moved = layout_mismatch(data_shape, value)
    if moved is not None:
        other, fix = moved
        report.layout = f"looks like {other}; the model input is {report.model_layout}"
        report.problems.append(
            f"data for {value.name!r} is {other} {list(data_shape)}, the input is {report.model_layout} "
            f"{list(model_shape)}: transpose it, e.g. np.transpose(x, {fix}) for [N,...] data")
        return
    report.layout = "does not match"
    report.problems.append(f"data for {value.name!r} has shape {list(data_shape)}; the input takes "
                           f"{list(model_shape)} (one sample) or [N,{','.join(map(str, model_shape[1:]))}]")


def _dtype_check(report: InputReport, value: Value, array: np.ndarray, quant) -> None:
    if value.dtype.is_float and array.dtype.kind == "f":
        return
    if array.dtype == value.dtype.numpy:
        return
    if quant is not None and value.dtype in _INTEGER_RANGES:
        scale, zero = float(quant[0].scale.min()), int(quant[0].zero_point[0])
        report.problems.append(f"data for {value.name!r} is {array.dtype}, the input is {value.type_str()}: "
                               f"quantize it first: np.clip(np.round(x / {scale:.6g}) + {zero}, "
                               f"{_INTEGER_RANGES[value.dtype][0]}, {_INTEGER_RANGES[value.dtype][1]})"
                               f".astype(np.{value.dtype.value})")
    else:
        report.problems.append(f"data for {value.name!r} is {array.dtype}, the input is {value.type_str()}; "
                               f"convert it to {value.dtype.value}")


def _range(report: InputReport, graph: Graph, value: Value, array: np.ndarray, quant) -> None:
    numbers = array.astype(np.float64, copy=False)
    finite = np.isfinite(numbers)
    if not finite.all():
        report.problems.append(f"data for {value.name!r} has {int(numbers.size - finite.sum())} NaN / Inf "
                               f"value(s) of {numbers.size}; clean the data")
        numbers = numbers[finite]
    if numbers.size == 0:
        report.problems.append(f"data for {value.name!r} holds no value")
        return
    low, high = float(numbers.min()), float(numbers.max())
    mean, std = float(numbers.mean()), float(numbers.std())
    report.value_range = (low, high, mean, std)
    if array.dtype.kind == "f":
        report.looks_like = _looks_like(low, high, mean, std)
        scaling = input_scaling(value)
        raw = bool(report.looks_like and report.looks_like.startswith(RAW_PIXELS))
        if raw and scaling is not None and scaling <= 0.01:
            report.looks_like = (f"{RAW_PIXELS}, which the model scales itself (its first op "
                                 f"multiplies the input by {scaling:.6g})")
    if quant is not None and value.dtype.is_float and array.dtype.kind == "f":
        lo, hi = _representable(*quant)
        report.representable = (lo, hi)
        if report.looks_like and report.looks_like.startswith(RAW_PIXELS) and lo <= low and high <= hi:
            report.looks_like = (f"{RAW_PIXELS}, as the model's quantized input expects (it represents "
                                 f"[{lo:.4g}, {hi:.4g}])")
        report.clipped_share = float(((numbers < lo) | (numbers > hi)).mean())
        if report.clipped_share > CLIP_HINT_SHARE:
            report.hints.append(f"{report.clipped_share:.1%} of the values lie outside what the quantized "
                                f"input represents [{lo:.4g}, {hi:.4g}]: the data is probably not "
                                "preprocessed as the calibration data was")


def _key_for(graph: Graph, value: Value, arrays: dict[str, np.ndarray]) -> str | None:
    if value.name in arrays:
        return value.name
    if len(graph.inputs) == 1 and len(arrays) == 1 and set(arrays) <= {"", UNNAMED_KEY}:
        return next(iter(arrays))
    return None


def check_data(graph: Graph, arrays: dict[str, np.ndarray]) -> tuple[list[InputReport], list[str]]:
    """Per-input reports and the file-level problems (unknown keys, sample counts)."""
    reports, counts, used = [], {}, set()
    for value in graph.inputs:
        quant = input_quantization(graph, value)
        report = InputReport(value.name, value.type_str(), image_layout(value))
        report.key = _key_for(graph, value, arrays)
        reports.append(report)
        if report.key is None:
            report.problems.append(f"no array for input {value.name!r}: key the .npz by input name")
            continue
        used.add(report.key)
        array = arrays[report.key]
        report.data_shape, report.data_dtype = tuple(array.shape), str(array.dtype)
        _layout_verdict(report, value, report.data_shape)
        sample = _sample_shape(report.data_shape, value.shape)
        report.samples = 1 if report.data_shape == value.shape else (array.shape[0] if sample else None)
        if report.samples is not None:
            counts[value.name] = report.samples
        _dtype_check(report, value, array, quant)
        _range(report, graph, value, array, quant)
    problems = []
    unknown = sorted(set(arrays) - used)
    if unknown:
        problems.append(f"arrays {', '.join(map(repr, unknown))} feed no model input (inputs: "
                        f"{', '.join(v.name for v in graph.inputs)})")
    if len(set(counts.values())) > 1:
        problems.append(f"inputs hold different sample counts {counts}")
    return reports, problems
