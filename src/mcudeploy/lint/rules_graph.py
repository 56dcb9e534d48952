"""Lint rules about the graph's structure: leftovers of training and export that cost time
on any microcontroller (unfoldable BatchNorm, Dropout, bilinear upsampling, large kernels
deep in the network, layout ops at the input, dynamic shapes the importer had to fix).

Each rule is one function registered in :data:`~mcudeploy.lint.findings.RULES`.
"""
from __future__ import annotations

from typing import Iterator

from ..ir import Node, get_op
from ..mapping.predicates import window
from .context import LintContext
from .findings import Finding, rule

LAYOUT_CHANGERS = ("Transpose", "Reshape", "Cast")


@rule("unfoldable-batchnorm", "BatchNormalization that cannot be folded into a Conv / Gemm")
def unfoldable_batchnorm(context: LintContext) -> Iterator[Finding]:
    for node in context.source_graph.nodes:
        if node.op != "BatchNormalization":
            continue
        blocker = context.fold_blocker(node)
        if blocker is None:
            continue
        elements = node.outputs[0].size
        yield Finding(
            "unfoldable-batchnorm", "warning", node.name,
            f"BatchNormalization {node.name!r} cannot be folded: {blocker}",
            f"it stays a separate layer: {elements} multiply-adds and a full read and write of "
            f"a {node.outputs[0].type_str()} tensor on every inference, plus its own "
            "quantization step",
            "put the BatchNormalization directly after its convolution (before any activation "
            "or branch), or fold it by hand into the next convolution, and re-export")


@rule("dropout-left-in", "Dropout nodes left in an inference graph")
def dropout_left_in(context: LintContext) -> Iterator[Finding]:
    for node in context.source_graph.nodes:
        if node.op == "Dropout":
            yield Finding(
                "dropout-left-in", "warning", node.name,
                f"Dropout {node.name!r} (ratio {node.attrs['ratio']:g}) is in the graph",
                "at inference it is an identity: if kept it is a copy of a "
                f"{node.outputs[0].type_str()} tensor and a break in operator fusion",
                "export in inference mode (PyTorch model.eval(), Keras training=False); "
                "mcudeploy's cleanup pipeline also removes it (analyze --optimize shows it)")


def _integer_upscale(node: Node) -> list[int] | None:
    """Per-axis integer scale factors of a Resize that enlarges, else ``None``."""
    factors = []
    for before, after in zip(node.inputs[0].shape, node.attrs["sizes"]):
        if after % before:
            return None
        factors.append(after // before)
    return factors if max(factors) > 1 else None


@rule("bilinear-resize", "bilinear Resize with an integer upscale factor (nearest would do)")
def bilinear_resize(context: LintContext) -> Iterator[Finding]:
    for node in context.graph.nodes:
        if node.op != "Resize" or node.attrs["mode"] != "linear":
            continue
        factors = _integer_upscale(node)
        if factors is None:
            continue
        scale = "x".join(str(f) for f in factors if f > 1)
        macc = get_op("Resize").macc(node)
        yield Finding(
            "bilinear-resize", "warning", node.name,
            f"Resize {node.name!r} upsamples by an integer factor ({scale}) with bilinear "
            "interpolation",
            f"bilinear costs {macc} MACC here and needs a rescale per output when quantized; "
            "nearest-neighbour upsampling by an integer factor is a pure copy (0 MACC), and "
            "NPUs and CMSIS-NN support it more widely",
            "use mode='nearest' for this upsample (the following convolution usually learns "
            "the smoothing; fine-tune if accuracy drops), or a ConvTranspose")


@rule("large-kernel-deep", "5x5 / 7x7 convolution kernels after the first layer")
def large_kernel_deep(context: LintContext) -> Iterator[Finding]:
    convolutions = [n for n in context.graph.nodes if n.op in ("Conv", "ConvTranspose")]
    for node in convolutions[1:]:  # the first layer may use a large kernel on purpose
        size = window(node)
        assert size is not None  # a convolution has a window
        if max(size) < 5 or node.inputs[0] in context.graph.inputs:
            continue
        k = max(size)
        yield Finding(
            "large-kernel-deep", "info", node.name,
            f"{node.op} {node.name!r} uses a {size[0]}x{size[1]} kernel inside the network",
            f"a {k}x{k} kernel costs {k * k / 9:.1f}x the MACC of a 3x3 per output; optimised "
            "CPU kernels and NPU convolution units are built around 1x1 and 3x3",
            f"replace it by {(k - 1) // 2} stacked 3x3 layers (same receptive field, fewer "
            "MACC) if the architecture allows")


def _boundary_kind(node: Node, context: LintContext) -> tuple[str, str] | None:
    """Where a layout op sits (the finding's words) and the fix for that place, or ``None``."""
    source = node.inputs[0]
    if source in context.graph.inputs:
        return (f"directly on model input {source.name!r}",
                "feed the input already in the layout and dtype the model wants (remove the op "
                "at export)")
    if source.producer is not None and source.producer.op == "Resize":
        return (f"right after the upsample {source.producer.name!r}",
                "let the layout come out of the upsample directly (remove the op at export)")
    return None


def _inserted_by_mcudeploy(node: Node, context: LintContext) -> bool:
    """A node the clean-up passes made (e.g. the NHWC conversion's input Transpose): not in the
    model as imported. Its cause is reported by the rule about the model (``nchw-input``)."""
    return context.source is not context.graph and node.name not in context.source_names


@rule("layout-op-at-boundary", "Transpose / Reshape / Cast at the input or right after an upsample")
def layout_op_at_boundary(context: LintContext) -> Iterator[Finding]:
    for node in context.graph.nodes:
        if node.op not in LAYOUT_CHANGERS or _inserted_by_mcudeploy(node, context):
            continue
        place = _boundary_kind(node, context)
        if place is None:
            continue
        where, fix = place
        value = node.outputs[0]
        severity = "info" if node.op == "Reshape" else "warning"
        yield Finding(
            "layout-op-at-boundary", severity, node.name,
            f"{node.op} {node.name!r} sits {where}",
            f"it moves a whole {value.type_str()} tensor ({value.nbytes} bytes) on the CPU "
            "without computing anything, and splits the NPU / kernel sequence around it", fix)


def _dynamic_entries(metadata: dict) -> list[tuple[bool, str]]:
    """``(is_batch_of_one, text)`` for each dynamic input dimension an importer fixed
    (``graph.metadata["dynamic_dimensions"]``, entries ``{input, axis, symbol, value}``)."""
    entries = metadata.get("dynamic_dimensions") or []
    return [(entry.get("axis") == 0 and entry.get("value") == 1,
             f"input {entry.get('input', '?')!r} dimension {entry.get('axis', '?')} "
             f"({entry.get('symbol') or 'unnamed'}) fixed to {entry.get('value', '?')}")
            for entry in entries if isinstance(entry, dict)]


@rule("dynamic-shape", "dynamic input dimensions that the importer fixed to a value")
def dynamic_shape(context: LintContext) -> Iterator[Finding]:
    # A dynamic batch fixed to 1 is what nearly every exported model has and what an MCU
    # runs: worth knowing (info), not a warning. Any other fixed dimension is a warning.
    for batch_of_one, text in _dynamic_entries(context.source_graph.metadata):
        yield Finding(
            "dynamic-shape", "info" if batch_of_one else "warning", None,
            f"the model declares a dynamic dimension: {text}",
            "the deployed model has static shapes and memory planned for exactly this size; "
            "other sizes will not run",
            "check that the fixed size is the one the device will feed, or give it explicitly "
            "with --input-shape NAME=D1,D2,...; re-export with static shapes to silence this")
