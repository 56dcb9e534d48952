"""Lint rules that depend on the target: NPU channel alignment, input layout and size,
nodes the NPU cannot take (from the mapper), tensors larger than the on-chip SRAM.

Each rule is one function registered in :data:`~mcudeploy.lint.findings.RULES`.
"""
from __future__ import annotations

from typing import Iterator

from ..ir import Node, Value, get_op
from ..mapping import CPU
from ..mapping.executor import share_text
from .context import LintContext
from .findings import Finding, rule

FINAL_PASS_THROUGH = ("activation", "shape", "quant")


def _concat_parts(node: Node, axis: int) -> str:
    return " + ".join(str(v.shape[axis]) for v in node.inputs if v is not None)


def _output_channels(node: Node, context: LintContext) -> tuple[int, str] | None:
    """(channels, how they arise) of a node whose output width the model author chose."""
    value = node.outputs[0]
    if node.op in ("Conv", "ConvTranspose") and value.rank == 4:
        axis = 1 if node.attrs["layout"] == "NCHW" else 3
        return value.shape[axis], "output channels"
    if node.op == "Gemm":
        return value.shape[-1], "output features"
    if node.op == "Concat" and value.rank == 4:
        layout = context.layout_of(value)
        axis = node.attrs["axis"] % 4
        if (layout, axis) in (("NCHW", 1), ("NHWC", 3), (None, 1), (None, 3)):
            return value.shape[axis], f"channels after Concat ({_concat_parts(node, axis)})"
    return None


def _is_final_layer(value: Value, context: LintContext) -> bool:
    """Whether ``value`` reaches a model output through single-reader activation / shape
    nodes only: its width is the task's (number of classes), not a design choice."""
    while value not in context.graph.outputs:
        users = value.users
        if len(users) != 1 or get_op(users[0].op).category not in FINAL_PASS_THROUGH:
            return False
        value = users[0].outputs[0]
    return True


@rule("channel-alignment", "channel counts not a multiple of the NPU's channel alignment")
def channel_alignment(context: LintContext) -> Iterator[Finding]:
    npu = context.target.npu
    if npu is None or npu.channel_alignment <= 1:
        return
    alignment = npu.channel_alignment
    for node in context.graph.nodes:
        found = _output_channels(node, context)
        if found is None or not found[0] % alignment or node.op not in npu.ops or \
                _is_final_layer(node.outputs[0], context):
            continue
        reasons = context.mapping.placement(node.name).reasons
        if any(r.code == "channels-unaligned" for r in reasons):
            continue  # the npu-fallback finding already says it
        channels, what = found
        padded = -(-channels // alignment) * alignment
        waste = (padded - channels) / padded
        yield Finding(
            "channel-alignment", "warning", node.name,
            f"{node.op} {node.name!r}: {channels} {what}, not a multiple of {alignment}",
            f"the {npu.name} works on channels in groups of {alignment}: this tensor is padded "
            f"to {padded}, so {waste:.0%} of its compute and memory traffic is padding",
            f"make the width {padded} (or {padded - alignment}) by changing the layer (or, after "
            "a Concat, the widths of its branches)" if padded > alignment else
            f"make the width {alignment}")


def _input_layout(value: Value, context: LintContext) -> str | None:
    return context.layout_of(value) if value.rank == 4 else None


@rule("nchw-input", "NCHW model input on a target whose kernels use NHWC")
def nchw_input(context: LintContext) -> Iterator[Finding]:
    if context.target.layout != "NHWC":
        return
    for value in context.source_graph.inputs:
        if _input_layout(value, context) != "NCHW" or value.shape[1] == 1:
            continue  # one channel: NCHW and NHWC are the same bytes
        yield Finding(
            "nchw-input", "warning", value.name,
            f"model input {value.name!r} {value.type_str()} is NCHW (channels first)",
            f"{context.target.name}'s kernels work in NHWC: either the whole input "
            f"({value.nbytes} bytes) is transposed on every inference, or the application "
            "must deliver channels-last data to a model that expects channels-first",
            "export the model channels-last (NHWC input), or feed NHWC data and let "
            "mcudeploy's NHWC conversion move the transpose into the input")


@rule("input-spatial-multiple", "input height / width not a multiple the target requires")
def input_spatial_multiple(context: LintContext) -> Iterator[Finding]:
    multiple = context.target.input_spatial_multiple
    if multiple <= 1:
        return
    for value in context.graph.inputs:
        size = context.spatial_size(value)
        if size is None or not (size[0] % multiple or size[1] % multiple):
            continue
        better = tuple(-(-d // multiple) * multiple for d in size)
        yield Finding(
            "input-spatial-multiple", "warning", value.name,
            f"model input {value.name!r} is {size[0]}x{size[1]} (HxW), not a multiple of "
            f"{multiple}",
            f"{context.target.name} moves input pixels in blocks of {multiple}x{multiple}: the "
            "input is padded or the first layer falls back to a slower path",
            f"use an input size that is a multiple of {multiple}, e.g. {better[0]}x{better[1]}")


def _float_only(placement) -> bool:
    """The node's only objection is a float dtype (the whole model is still float)."""
    return [r.code for r in placement.reasons] == ["dtype-unsupported"] and \
        "float op" in placement.reasons[0].message


@rule("npu-fallback", "nodes that stay on the CPU of an NPU target, with the mapper's reasons")
def npu_fallback(context: LintContext) -> Iterator[Finding]:
    target = context.target
    if target.npu is None:
        return
    removed = {n.name for n in context.graph.nodes if context.removed_by_cleanup(n)}
    on_cpu = [p for p in context.mapping.placements if p.device == CPU and p.node not in removed]
    floats = [p for p in on_cpu if _float_only(p)]
    if floats:
        yield _float_summary(floats, context)
    hypothetical = context.executor == "mcudeploy"     # mcudeploy's CPU code runs every node anyway
    for placement in on_cpu:
        if placement in floats:
            continue
        severity = "info" if placement.forced or placement.macc == 0 or hypothetical else "warning"
        yield Finding(
            "npu-fallback", severity, placement.node,
            "; ".join(reason.message for reason in placement.reasons),
            ("with --executor vendor-npu, " if hypothetical else "")
            + f"{placement.op} runs on the {target.core.name} at {target.core.clock_hz / 1e6:g} MHz "
            f"({placement.macc} MACC) instead of the {target.npu.name}, and its tensors cross "
            "between the NPU and the CPU",
            "remove --cpu for this node" if placement.forced else
            "change the node as the message says, or accept the CPU time")


@rule("executor", "who runs the nodes on an NPU target: mcudeploy's CPU code or the vendor's NPU compiler")
def executor(context: LintContext) -> Iterator[Finding]:
    target, mapping = context.target, context.mapping
    if target.npu is None or context.executor != "mcudeploy":
        return
    npu = [p for p in mapping.placements if p.device != CPU]
    if not npu:
        return
    share = sum(p.macc for p in npu) / mapping.total_macc if mapping.total_macc else 0.0
    yield Finding(
        "executor", "info", None,
        f"executor mcudeploy: every node runs as mcudeploy's {target.core.name} code; with --executor "
        f"vendor-npu {len(npu)} of {len(mapping.placements)} nodes ({share_text(share)} of the MACC) would run on the "
        f"{target.npu.name}",
        "mcudeploy writes CPU kernels only; the NPU runs code from the vendor's NPU compiler",
        "keep the CPU code, or estimate and generate with --executor vendor-npu (the hand-off for the "
        "vendor's compiler); the NPU findings here say what that executor would meet")


def _float_summary(floats: list, context: LintContext) -> Finding:
    """One finding for every node kept off the NPU only because it computes in float."""
    npu, mapping = context.target.npu, context.mapping
    assert npu is not None  # nodes fall back from the NPU of an NPU target only
    macc = sum(p.macc for p in floats)
    names = ", ".join(repr(p.node) for p in floats[:5]) + (", ..." if len(floats) > 5 else "")
    share = macc / mapping.total_macc if mapping.total_macc else 0.0
    return Finding(
        "npu-fallback", "warning", None,
        f"{len(floats)} of {len(mapping.placements)} nodes ({macc} MACC, {share:.0%} of the "
        f"model) are float ops left in what must be an "
        f"{'/'.join(sorted(npu.dtypes))} graph: {names}",
        f"the {npu.name} computes only {'/'.join(sorted(npu.dtypes))}: these nodes run in float "
        f"on the {context.target.core.name}",
        "quantize the model (post-training int8 quantization with calibration data, or a "
        "quantized TFLite / QDQ ONNX export) and lint the quantized model")


def _activations(context: LintContext) -> list[Value]:
    return [v for v in context.graph.values() if not v.is_constant]


def _deployed_bytes(value: Value) -> tuple[int, str]:
    """Bytes the tensor takes in the deployed code, and how that was decided. The generated
    code is full-integer: a float tensor of a model still to be quantized is judged at int8
    (its size after ``mcudeploy quantize``), not at float32, which no deployment uses."""
    if value.dtype.is_float:
        return value.size, f" as int8 after quantization ({value.nbytes} bytes as {value.dtype.value} now)"
    return value.nbytes, ""


@rule("tensor-exceeds-sram", "tensors larger than the largest on-chip SRAM region")
def tensor_exceeds_sram(context: LintContext) -> Iterator[Finding]:
    target = context.target
    largest = target.largest_sram
    if largest is None:
        return
    external = [r for r in target.regions if r.kind == "psram" and r.writable]
    for value in _activations(context):
        size, judged = _deployed_bytes(value)
        if size <= largest.size:
            continue
        where = value.producer.name if value.producer is not None else value.name
        excess = size - largest.size
        needs = (f"tensor {value.name!r} {value.type_str()} needs {size} bytes{judged}, "
                 f"{excess} more than {largest.name} ({largest.size} bytes), the largest ")
        if external:
            region = max(external, key=lambda r: r.size)
            yield Finding(
                "tensor-exceeds-sram", "warning", where, needs + "on-chip region",
                f"it must live in {region.name} ({region.bandwidth / 1e6:g} MB/s), far slower "
                "than on-chip SRAM",
                "reduce the input resolution or the layer width, tile the layers around it "
                "([tiling] in the deployment options), or split the layer so that its tensors "
                "fit on chip")
        else:
            yield Finding(
                "tensor-exceeds-sram", "error", where, needs + f"writable region of {target.name}",
                "a tensor must sit in one contiguous region and this target has no external "
                "RAM: the model cannot run untiled",
                "tile the layers around it ([tiling] auto = true, or mcudeploy search), reduce "
                "the input resolution or the layer width, or choose a target with more SRAM or "
                "external PSRAM")
