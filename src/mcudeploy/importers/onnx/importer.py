"""``import_onnx``: ONNX file bytes -> verified IR graph, as one straight line of steps.

parse -> decode names -> name nodes -> structural checks made before any onnx C++ code
runs (:mod:`.sanity`) -> external data (safe paths) -> tensor data checks -> topological
sort (cycles) -> opset and domains -> static input shapes -> onnx.checker -> opset upgrade
-> shape inference -> per node: fold (constant inputs, Shape) or convert (converter table)
-> outputs -> verify.

``graph.metadata`` gets ``format``, ``opset`` (as declared), ``opset_upgraded_to`` (when
the version converter ran), ``ir_version``, ``producer_name``, ``producer_version``.
"""
from __future__ import annotations

import logging
from pathlib import Path

import onnx
from onnx import numpy_helper

from ...errors import GraphError, ModelFormatError, UnsupportedError
from ...ir import Graph, verify
from . import parse, sanity
from .context import ConversionContext
from .converters import CONVERTERS
from .external_data import load_external_data
from .fold_budget import check_fold_size
from .folding import fold, is_foldable
from .input_shapes import InputSpec, dynamic_dimensions, infer_static_shapes, known_shapes, resolve_input_shapes
from .toposort import sort_nodes

log = logging.getLogger(__name__)

NCHW_RANK = 4
ALWAYS_FOLDED = ("Constant", "Shape", "Size")
NOT_STATIC = {
    "If": "control flow (a data-dependent branch)",
    "Loop": "control flow (a loop)",
    "Scan": "control flow (a scan loop)",
    "NonZero": "an op whose output shape depends on the input data",
}


def supported_ops() -> list[str]:
    """ONNX op types the importer accepts (besides any op folded on constant inputs)."""
    return sorted(set(CONVERTERS) | set(ALWAYS_FOLDED))


def unsupported_op_message(node: onnx.NodeProto) -> str:
    """Why ``node`` (an op without a converter, not folded) cannot be imported."""
    if node.op_type in NOT_STATIC:
        return (f"{NOT_STATIC[node.op_type]} cannot be compiled to a static MCU schedule "
                "(fixed shapes, fixed order). Unroll the loop / resolve the branch, or export "
                "the model without it (e.g. torch.onnx.export with fixed sizes instead of "
                "scripting).")
    return (f"op {node.op_type!r} is not supported. Supported ONNX ops: "
            f"{', '.join(supported_ops())} (any op whose inputs are all constants is also "
            "evaluated at import time).")


def _unsupported_op(ctx: ConversionContext, node: onnx.NodeProto) -> UnsupportedError:
    return ctx.unsupported(node, unsupported_op_message(node))


def _convert_node(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    for name in node.input:
        if name and not ctx.is_known(name):
            raise GraphError(f"{ctx.path}: node {node.name!r} ({node.op_type}) reads "
                             f"{name!r}, which no node, graph input or initializer provides")
    if is_foldable(ctx, node):
        check_fold_size(ctx, node, ctx.inferred_shapes)   # before the evaluator allocates
        try:
            fold(ctx, node)
            return
        except Exception as err:  # the reference evaluator raises anything; fall back
            if node.op_type not in CONVERTERS:
                raise ctx.unsupported(node, "its inputs are constants, but evaluating it at "
                                      f"import time failed: {err}") from None
            log.debug("could not fold %r (%s); converting it instead", node.name, err)
    converter = CONVERTERS.get(node.op_type)
    if converter is None:
        raise _unsupported_op(ctx, node)
    try:
        converter(ctx, node)
    except (GraphError, UnsupportedError) as err:  # IR checks name the node, add the file
        if str(ctx.path) in str(err):
            raise
        raise type(err)(f"{ctx.path}: {err}") from None


def _cross_check(ctx: ConversionContext, node: onnx.NodeProto,
                 expected: dict[str, tuple[int, ...]]) -> None:
    """Warn when the IR shape of an output differs from ONNX shape inference's."""
    for name in node.output:
        if name in expected and name in ctx.values and ctx.values[name].shape != expected[name]:
            log.warning("%s: node %r output %r: mcudeploy infers %s, ONNX shape inference %s",
                        ctx.path, node.name, name, list(ctx.values[name].shape),
                        list(expected[name]))


def _build_graph(path: Path, model: onnx.ModelProto, opset: int,
                 specs: dict[str, InputSpec]) -> Graph:
    graph = Graph(model.graph.name or path.stem)
    consumed = {name for node in model.graph.node for name in node.input if name}
    consumed |= {value.name for value in model.graph.output}
    ctx = ConversionContext(path, graph, opset, consumed)
    if model.graph.sparse_initializer:
        raise UnsupportedError(f"{path}: sparse initializers "
                               f"({model.graph.sparse_initializer[0].values.name!r}) are not "
                               "supported; save the weights dense")
    for tensor in model.graph.initializer:
        try:
            ctx.constants[tensor.name] = numpy_helper.to_array(tensor)
        except (ValueError, TypeError, KeyError) as err:   # checked by sanity; a last guard
            raise ModelFormatError(f"{path}: initializer {tensor.name!r} cannot be read "
                                   f"({err})") from None
    for name, (dtype, shape) in specs.items():
        layout = "NCHW" if len(shape) == NCHW_RANK else None
        ctx.values[name] = graph.add_input(name, dtype, shape, layout=layout)
    expected = known_shapes(model)
    ctx.inferred_shapes = expected
    for node in model.graph.node:
        _convert_node(ctx, node)
        _cross_check(ctx, node, expected)
    graph.outputs = [ctx.value(value.name) for value in model.graph.output]
    return graph


def _metadata(model: onnx.ModelProto, opset: int, working_opset: int) -> dict:
    metadata = {"format": "onnx", "opset": opset, "ir_version": int(model.ir_version),
                "producer_name": model.producer_name,
                "producer_version": model.producer_version}
    if working_opset != opset:
        metadata["opset_upgraded_to"] = working_opset
    return metadata


def import_onnx(path: Path, data: bytes, *, input_shapes: dict[str, tuple[int, ...]]) -> Graph:
    """Import the ONNX model ``data`` (read from ``path``) into a verified IR graph.

    ``input_shapes`` overrides the shape of named graph inputs (dynamic dimensions).
    External data files are read from ``path``'s folder only.
    """
    path = Path(path)
    model = parse.parse_model(path, data)
    sanity.decode_names(path, model)
    parse.name_nodes(model.graph)
    sanity.check_graph(path, model, parse.DEFAULT_DOMAINS)   # before any onnx C++ code runs
    load_external_data(path, model)
    sanity.check_tensors(path, model)
    sort_nodes(path, model.graph)
    opset = parse.default_opset(path, model)
    parse.refuse_foreign_domains(path, model)
    specs = resolve_input_shapes(path, model.graph, input_shapes)
    parse.check_model(path, model, opset)
    model, working_opset = parse.upgrade_opset(path, model, opset)
    model = infer_static_shapes(path, model, specs)
    graph = _build_graph(path, model, working_opset, specs)
    graph.metadata.update(_metadata(model, opset, working_opset))
    graph.metadata["dynamic_dimensions"] = dynamic_dimensions(model.graph, specs)
    try:
        verify(graph)
    except GraphError as err:
        raise GraphError(f"{path}: the imported graph is inconsistent: {err}") from None
    return graph
