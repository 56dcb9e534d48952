"""A real model's layers as the records of ``cmsis_nn_harness.c``'s layer-file mode.

    layer_records(graph, activations, helium) -> [LayerRecord]   (one per node, graph order)
    write_layer_file(records, path) -> count of records written (those with a CMSIS-NN kernel)

Each node of a deployed (NHWC, int8) graph becomes the call TensorFlow Lite Micro's CMSIS-NN
kernel makes for it, with the node's real weights and bias, the quantization parameters
mcudeploy's integer reference prepares (``reference.int_kernels``: the multipliers and shifts
of TFLite's ``QuantizeMultiplier``), its real input activations and, as the expected output,
the reference's output (``run_int(..., capture=True)``). Layouts: a Conv's weights are
``[O, kH, kW, C]`` as CMSIS-NN's; a depthwise's ``[O, kH, kW, 1]`` become ``[1, kH, kW, O]``;
a Gemm's ``[N, K]`` is the fully connected filter as is. Nodes without a CMSIS-NN kernel
(reshape, grouped non-depthwise conv, broadcasting add, int16, ...) keep ``blob = None`` and
say why in ``reason``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cmsis_nn_measure import FIELDS, HARNESS_BYTES, HARNESS_CHANNELS, KINDS, _window_case
from mcudeploy.estimate.kernel_map import cmsis_kernel, is_depthwise
from mcudeploy.ir import Graph, Node
from mcudeploy.reference.int_kernels import get_int_kernel

COPIES = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout")


@dataclass
class LayerRecord:
    node: str
    op: str
    kernel: str | None         # the CMSIS-NN kernel (estimate.kernel_map's name)
    blob: bytes | None         # the harness record (None: not run)
    reason: str = ""           # why not run


def _array(values, dtype) -> bytes:
    return np.ascontiguousarray(np.asarray(values), dtype=dtype).tobytes()


def _quant(params) -> tuple[bytes, bytes, int]:
    multipliers, shifts = np.atleast_1d(params.output_multiplier), np.atleast_1d(params.output_shift)
    return _array(multipliers, np.int32), _array(shifts, np.int32), multipliers.size


def _bias(node: Node, index: int = 2) -> bytes:
    bias = node.input(index)
    return b"" if bias is None else _array(bias.const, np.int32)


def _conv(node: Node, params, activations) -> tuple[dict, dict]:
    weights = node.inputs[1].const
    depthwise = is_depthwise(node)
    case = _window_case(node, "depthwise" if depthwise else "conv")
    case.update(input_offset=params.input_offset, output_offset=params.output_offset,
                activation_min=params.activation_min, activation_max=params.activation_max)
    multipliers, shifts, count = _quant(params)
    filters = weights.transpose(3, 1, 2, 0) if depthwise else weights
    return case, {"input": _array(activations[node.inputs[0].name], np.int8), "filter": _array(filters, np.int8),
                  "bias": _bias(node), "multiplier": multipliers, "shift": shifts, "quant_count": count}


def _fully_connected(node: Node, params, activations) -> tuple[dict, dict]:
    x, weights = node.inputs[0], node.inputs[1]
    depth = x.shape[-1]
    per_channel = weights.quant.scale.size > 1
    case = {"kind": KINDS["fully_connected"], "n": x.size // depth, "c": depth, "o": node.outputs[0].shape[-1],
            "input_offset": params.input_offset, "filter_offset": params.weights_offset,
            "output_offset": params.output_offset, "activation_min": params.activation_min,
            "activation_max": params.activation_max, "per_channel": int(per_channel)}
    multipliers, shifts, count = _quant(params)
    if not per_channel:
        multipliers, shifts, count = multipliers[:4], shifts[:4], 1
    return case, {"input": _array(activations[x.name], np.int8), "filter": _array(weights.const, np.int8),
                  "bias": _bias(node), "multiplier": multipliers, "shift": shifts, "quant_count": count}


def _operand(value, activations) -> bytes:
    return _array(value.const if value.is_constant else activations[value.name], np.int8)


def _elementwise(node: Node, params, activations) -> tuple[dict, dict]:
    n, h, w, c = ((1,) * 4 + tuple(node.outputs[0].shape))[-4:]
    case = {"kind": KINDS[node.op.lower()], "n": n, "h": h, "w": w, "c": c, "input_offset": params.input1_offset,
            "offset_2": params.input2_offset, "output_offset": params.output_offset,
            "out_multiplier": params.output_multiplier, "out_shift": params.output_shift,
            "activation_min": params.activation_min, "activation_max": params.activation_max}
    if node.op == "Add":
        case.update(multiplier_1=params.input1_multiplier, shift_1=params.input1_shift,
                    multiplier_2=params.input2_multiplier, shift_2=params.input2_shift, left_shift=params.left_shift)
    return case, {"input": _operand(node.inputs[0], activations), "input2": _operand(node.inputs[1], activations)}


def _pool(node: Node, params, activations) -> tuple[dict, dict]:
    case = _window_case(node, "avg_pool" if node.op == "AveragePool" else "max_pool")
    case.update(activation_min=params.activation_min, activation_max=params.activation_max)
    return case, {"input": _array(activations[node.inputs[0].name], np.int8)}


def _softmax(node: Node, params, activations) -> tuple[dict, dict]:
    out = node.outputs[0]
    case = {"kind": KINDS["softmax"], "c": out.shape[-1], "extra": out.size // out.shape[-1],
            "multiplier_1": params.input_multiplier, "shift_1": params.input_left_shift, "diff_min": params.diff_min}
    return case, {"input": _array(activations[node.inputs[0].name], np.int8)}


def _transpose(node: Node, params, activations) -> tuple[dict, dict]:
    x = node.inputs[0]
    lead = 4 - x.rank
    shape = (1,) * lead + tuple(x.shape)
    perm = list(range(lead)) + [lead + p for p in node.attrs["perm"]]
    case = {"kind": KINDS["transpose"], "n": shape[0], "h": shape[1], "w": shape[2], "c": shape[3], "extra": 4,
            **{f"perm_{index}": axis for index, axis in enumerate(perm)}}
    return case, {"input": _array(activations[x.name], np.int8)}


BUILDERS = {"Conv": _conv, "Gemm": _fully_connected, "Add": _elementwise, "Mul": _elementwise,
            "AveragePool": _pool, "MaxPool": _pool, "Softmax": _softmax, "Transpose": _transpose}


def _refusal(node: Node) -> str:
    """Why ``node`` has no CMSIS-NN int8 call ("" when it has one)."""
    if node.op in COPIES:
        return "no CMSIS-NN kernel (TFLM's reshape: a copy, none when in place)"
    if node.op not in BUILDERS:
        return f"no CMSIS-NN kernel for {node.op}"
    if any(str(v.dtype) != "int8" for v in (*node.inputs[:1], node.outputs[0])):
        return "not int8 (CMSIS-NN's 16x8 kernels are not measured here)"
    if node.op == "Conv" and node.attrs.get("group", 1) > 1 and not is_depthwise(node):
        return "grouped convolution (not measured)"
    if node.op in ("Add", "Mul") and node.inputs[0].shape != node.inputs[1].shape:
        return "broadcasting element-wise op (TFLM runs its reference kernel)"
    if node.op == "Transpose" and node.inputs[0].rank > 4:
        return "transpose of rank > 4"
    return ""


def _pack(case: dict, blobs: dict, expected: bytes) -> bytes | None:
    parts = [blobs.get(name, b"") for name in ("input", "input2", "filter", "bias", "multiplier", "shift")]
    sizes = {"input_bytes": len(parts[0]), "input2_bytes": len(parts[1]), "filter_bytes": len(parts[2]),
             "bias_count": len(parts[3]) // 4, "quant_count": blobs.get("quant_count", 0),
             "output_bytes": len(expected)}
    if max(len(part) for part in (*parts[:3], expected)) > HARNESS_BYTES or \
            max(sizes["bias_count"], sizes["quant_count"]) > HARNESS_CHANNELS:
        return None
    header = {**case, **sizes}
    return _array([int(header.get(name, 0)) for name in FIELDS], np.int32) + b"".join(parts) + expected


def layer_records(graph: Graph, activations: dict[str, np.ndarray], helium: bool) -> list[LayerRecord]:
    """One record per node of ``graph`` (``activations``: every value by name, run_int's capture)."""
    records = []
    for node in graph.nodes:
        kernel = cmsis_kernel(node, helium)
        reason = _refusal(node)
        if reason:
            records.append(LayerRecord(node.name, node.op, kernel, None, reason))
            continue
        params = get_int_kernel(node.op).prepare(node)
        case, blobs = BUILDERS[node.op](node, params, activations)
        blob = _pack(case, blobs, _array(activations[node.outputs[0].name], np.int8))
        records.append(LayerRecord(node.name, node.op, kernel, blob,
                                   "" if blob else "buffers larger than the harness's (320 KiB / 2048 channels)"))
    return records


def write_layer_file(records: list[LayerRecord], path: Path) -> int:
    """The harness's layers.bin of the records that run; returns their count."""
    blobs = [record.blob for record in records if record.blob is not None]
    path.write_bytes(_array([len(blobs)], np.int32) + b"".join(blobs))
    return len(blobs)
