"""Bytes -> checked ``onnx.ModelProto`` at a supported opset.

* :func:`parse_model` refuses empty, random or truncated files (``ModelFormatError``).
* :func:`name_nodes` gives every unnamed node ``<OpType>_<index>`` so messages can name it.
* :func:`default_opset` / :func:`refuse_foreign_domains` / :func:`upgrade_opset`: opsets
  11..21 are imported as they are; older models go through ``onnx.version_converter`` to
  :data:`UPGRADE_TARGET`; newer ones are attempted with a warning. Nodes of other domains
  (``com.microsoft``, ``ai.onnx.ml``, local functions) are refused.
* :func:`check_model` runs ``onnx.checker`` and turns its complaints into our errors.
"""
from __future__ import annotations

import logging
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError
from onnx import shape_inference, version_converter

from ...errors import ModelFormatError, UnsupportedError

log = logging.getLogger(__name__)

MIN_NATIVE_OPSET = 11
MAX_TESTED_OPSET = 21
UPGRADE_TARGET = 13
DEFAULT_DOMAINS = ("", "ai.onnx")
# Complaints that do not stop an import: missing output shapes (onnxruntime accepts them and
# shape inference fills them in) and deprecated ops (Upsample in opset 10+, which the version
# converter or a converter of its own handles).
TOLERATED_CHECKER_COMPLAINTS = ("Field 'shape' of 'type' is required but missing",
                                "is deprecated in domain_version")


def parse_model(path: Path, data: bytes) -> onnx.ModelProto:
    """Parse the protobuf; a file that does not decode, or decodes to no graph, is refused."""
    hint = "it is not a valid, complete ONNX model (empty, truncated or another format?)"
    if not data:
        raise ModelFormatError(f"{path}: the file is empty; {hint}")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError, UnicodeDecodeError) as err:
        raise ModelFormatError(f"{path}: {hint} (protobuf decoding failed: {err})") from None
    if model.ir_version <= 0 or not model.HasField("graph") or not model.graph.node:
        raise ModelFormatError(f"{path}: {hint} (no IR version, graph or nodes found after "
                               "decoding)")
    return model


def name_nodes(graph: onnx.GraphProto) -> None:
    """Name unnamed nodes ``<OpType>_<index>`` (unique against the names already there)."""
    taken = {node.name for node in graph.node if node.name}
    for index, node in enumerate(graph.node):
        if node.name:
            continue
        name, suffix = f"{node.op_type}_{index}", 0
        while name in taken:
            suffix += 1
            name = f"{node.op_type}_{index}_{suffix}"
        node.name = name
        taken.add(name)


def default_opset(path: Path, model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in DEFAULT_DOMAINS:
            return int(entry.version)
    raise ModelFormatError(f"{path}: the model imports no default-domain (ai.onnx) opset; "
                           "it is not a valid ONNX model")


def refuse_foreign_domains(path: Path, model: onnx.ModelProto) -> None:
    """Only ``ai.onnx`` ops are supported (custom / contrib domains have no IR meaning)."""
    for node in model.graph.node:
        if node.domain not in DEFAULT_DOMAINS:
            raise UnsupportedError(
                f"{path}: node {node.name!r} is op {node.op_type!r} of domain {node.domain!r}; "
                "only standard ONNX (ai.onnx) ops are supported. Export the model without "
                "runtime-specific optimisations (e.g. onnxruntime contrib / fused ops).")


def upgrade_opset(path: Path, model: onnx.ModelProto, opset: int) -> tuple[onnx.ModelProto, int]:
    """Convert a model older than opset 11 to :data:`UPGRADE_TARGET`; warn beyond 21."""
    if opset > MAX_TESTED_OPSET:
        log.warning("%s: opset %d is newer than the newest tested (%d); importing anyway",
                    path, opset, MAX_TESTED_OPSET)
    if opset >= MIN_NATIVE_OPSET:
        return model, opset
    log.info("%s: upgrading the model from opset %d to %d with onnx.version_converter",
             path, opset, UPGRADE_TARGET)
    try:
        upgraded = version_converter.convert_version(model, UPGRADE_TARGET)
    except Exception as err:  # the converter raises bare RuntimeError / ConvertError
        raise UnsupportedError(f"{path}: the model uses opset {opset}; upgrading it to "
                               f"{UPGRADE_TARGET} failed ({err}). Re-export it with opset "
                               f">= {MIN_NATIVE_OPSET}.") from None
    name_nodes(upgraded.graph)  # the converter adds unnamed nodes
    _keep_old_resize_semantics(upgraded.graph)
    return upgraded, UPGRADE_TARGET


def _keep_old_resize_semantics(graph: onnx.GraphProto) -> None:
    """Upsample (<= 9) and Resize-10 map coordinates as ``asymmetric`` with ``floor``
    rounding (what onnxruntime runs), but the version converter leaves the opset-11
    defaults (half_pixel, round_prefer_floor) on the Resize it makes; every Resize of an
    upgraded model comes from one of them, so their semantics are written back."""
    for node in graph.node:
        if node.op_type != "Resize":
            continue
        present = {attribute.name for attribute in node.attribute}
        for name, value in (("coordinate_transformation_mode", "asymmetric"),
                            ("nearest_mode", "floor")):
            if name not in present:
                node.attribute.append(onnx.helper.make_attribute(name, value))


def check_model(path: Path, model: onnx.ModelProto, opset: int) -> None:
    """``onnx.checker`` (not the strict full check); its errors become ``ModelFormatError``."""
    if opset > onnx.defs.onnx_opset_version():
        log.warning("%s: opset %d is unknown to onnx %s; skipping onnx.checker", path, opset,
                    onnx.__version__)
        return
    try:  # the checker wants shapes on graph outputs; let inference fill in what it can
        checked = shape_inference.infer_shapes(model, check_type=False, strict_mode=False)
    except Exception:  # a model inference cannot read: the checker will say why
        checked = model
    try:
        onnx.checker.check_model(checked, full_check=False)
    except (onnx.checker.ValidationError, ValueError) as err:
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        if any(pattern in first_line for pattern in TOLERATED_CHECKER_COMPLAINTS):
            log.info("%s: onnx.checker: %s (tolerated)", path, first_line)
            return
        raise ModelFormatError(f"{path}: not a valid ONNX model: onnx.checker says: "
                               f"{first_line}") from None
