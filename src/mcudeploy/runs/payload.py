"""The payload of a run: the per-layer and per-buffer data a command produced, as JSON.

Stored compressed with the run (table ``payloads``) and rendered by ``mcudeploy report``.
Every key is optional: a section is there when the run's command computed it. Schema
version :data:`PAYLOAD_SCHEMA`::

    {
      "schema": 1,
      "layers": [                 # execution order; one entry per node, merged by "name"
        {"name": str, "op": str, "index": int,
         "input_shapes": [[int]], "output_shapes": [[int]], "output_dtype": str,
         "macc": int, "params": int, "weight_bytes": int, "output_bytes": int,     # analyze / plan
         "device": "npu" | "cpu", "reasons": [str],                              # plan / lint (mapping)
         "arena_offset": int, "arena_size": int, "region": str,                  # plan (the output tensor)
         "first_step": int, "last_step": int, "kernel": str,                     # plan (kernel variant)
         "estimated_ms": float,                                                  # estimate (cost model)
         "cosine": float, "sqnr_db": float, "max_abs_error": float, "drop_db": float}  # validate --per-layer
      ],
      "analysis":   {model, sha256, format, inputs, outputs, total_macc, params, weights_bytes,
                     activation_bytes, peak_live_bytes, peak_step, peak_tensors, io_bytes, op_counts},
      "plan":       {arena_bytes, no_reuse_bound_bytes, file_order_bound_bytes, reuse_rate, allocator,
                     order: [node], tensors: {name: {offset, size, first_step, last_step, region,
                     alias_of}}, scratch: {node: {...}}, weights: {name: region},
                     ledger: [{item, region, bytes, note}], regions: [{region, kind, capacity, used,
                     overflow}], fits: bool, verdict: str, kernel_variants: {variant: count}},
      "mapping":    {target, node_rate, macc_rate},
      "validation": validate.report.to_dict(result)   (verdict, outputs, checks, per_layer, hint),
      "quantization": {model, observer, samples, output_sqnr_db, output_cosine, float_nodes,
                       int16_nodes, layers: [{node, op, precision, sqnr_db, cosine}]},
      "lint":       {findings: [{rule, severity, node, message, why, fix}]},
      "latency":    {total_ms: float, layers: [{name, ms}]},         # the cost model's breakdown
      "trials":     [{"trial": int, ...options..., ...figures...}]    # the search's trial log
    }

The builders below take the stage records and return plain JSON-able data; they import
nothing heavy, so a command pays only for the sections it fills.
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from ..deployment import Deployment

PAYLOAD_SCHEMA = 1


def clean(data: Any) -> Any:
    """JSON-able copy: dataclasses as dicts, tuples as lists, non-finite floats as None."""
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        data = dataclasses.asdict(data)
    if isinstance(data, dict):
        return {str(key): clean(value) for key, value in data.items()}
    if isinstance(data, (list, tuple, set, frozenset)):
        return [clean(value) for value in data]
    if isinstance(data, float):          # also numpy float64, a float subclass: made a plain float
        return float(data) if math.isfinite(data) else None
    if isinstance(data, (str, int, bool)) or data is None:
        return data
    if hasattr(data, "item"):          # numpy scalars
        return clean(data.item())
    return str(data)


def merge_layers(payload: dict[str, Any], rows: Iterable[dict[str, Any]]) -> None:
    """Add ``rows`` to ``payload["layers"]``: fields of a known name update its entry."""
    layers = payload.setdefault("layers", [])
    by_name = {layer["name"]: layer for layer in layers}
    for row in rows:
        if row["name"] in by_name:
            by_name[row["name"]].update({k: v for k, v in row.items() if v is not None})
        else:
            layers.append(dict(row))
            by_name[row["name"]] = layers[-1]


def analysis_sections(analysis) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(analysis section, layer rows)`` of a :class:`~mcudeploy.report.analysis.Analysis`."""
    summary = clean(analysis)
    rows = summary.pop("layers")
    for row in rows:
        row.pop("category", None)
        row.pop("live_bytes", None)
    summary.pop("metadata", None)
    return summary, rows


def graph_layer_rows(graph) -> list[dict[str, Any]]:
    """The structural layer rows of a graph (op, shapes, MACC, parameters, bytes)."""
    from ..ir import get_op

    seen: set[int] = set()
    rows = []
    for index, node in enumerate(graph.nodes):
        constants = [v for v in node.inputs if v is not None and v.is_constant and id(v) not in seen]
        seen.update(id(v) for v in constants)
        rows.append({"name": node.name, "op": node.op, "index": index,
                     "input_shapes": [list(v.shape) for v in node.inputs if v is not None and not v.is_constant],
                     "output_shapes": [list(v.shape) for v in node.outputs],
                     "output_dtype": str(node.outputs[0].dtype) if node.outputs else "",
                     "macc": int(get_op(node.op).macc(node)), "params": sum(v.size for v in constants),
                     "weight_bytes": sum(v.nbytes for v in constants),
                     "output_bytes": sum(v.nbytes for v in node.outputs)})
    return rows




def deployment_sections(deployment: Deployment) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(plan section, layer rows)`` of a :class:`~mcudeploy.deployment.Deployment`: the
    plan, ledger and verdict; per node the arena place of its first output and its kernel.
    (Built field by field: ``dataclasses.asdict`` of every tensor costs milliseconds.)"""
    plan, ledger = deployment.plan, deployment.ledger
    placed = lambda items: {name: {"offset": p.offset, "size": p.size, "first_step": p.first_step,  # noqa: E731
                                   "last_step": p.last_step, "region": p.region, "alias_of": p.alias_of}
                            for name, p in items.items()}
    section: dict[str, Any] = {"arena_bytes": plan.arena_bytes, "no_reuse_bound_bytes": plan.no_reuse_bound_bytes,
                               "file_order_bound_bytes": plan.file_order_bound_bytes, "alignment": plan.alignment,
                               "io_in_arena": plan.io_in_arena, "allocator": plan.allocator,
                               "elided_nodes": plan.elided_nodes}
    section.update(reuse_rate=round(plan.reuse_rate, 4), order=list(plan.order), tensors=placed(plan.tensors),
                   scratch=placed(plan.scratch), weights=dict(plan.weights),
                   ledger=[clean(line) for line in ledger.lines],
                   regions=[{**clean(region), "overflow": region.overflow} for region in ledger.regions],
                   fits=ledger.fits, verdict=ledger.verdict(), kernel_variants=deployment.kernels.counts())
    kernels = deployment.kernels.choices
    rows = []
    for node in deployment.graph.nodes:
        tensor = plan.tensors.get(node.outputs[0].name) if node.outputs else None
        row: dict[str, Any] = {"name": node.name}
        if tensor is not None:
            row.update(arena_offset=tensor.offset, arena_size=tensor.size, region=tensor.region,
                       first_step=tensor.first_step, last_step=tensor.last_step)
        if node.name in kernels:
            row["kernel"] = kernels[node.name].variant
        rows.append(row)
    return section, rows


def mapping_sections(mapping) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(mapping section, layer rows with device and reasons)`` of a mapping."""
    rows = [{"name": p.node, "device": p.device, "reasons": [r.message for r in p.reasons]}
            for p in mapping.placements]
    return {"target": mapping.target, "node_rate": mapping.node_rate, "macc_rate": mapping.macc_rate}, rows


def validation_sections(result) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(validation section, per-layer error rows)`` of a validation result."""
    from ..validate.report import to_dict

    section = to_dict(result)
    rows = []
    if result.layers is not None:   # every deployed layer in order, the compared ones with their errors
        compared = {layer.node: {"cosine": layer.cosine, "sqnr_db": layer.sqnr_db,
                                 "max_abs_error": layer.max_abs_error, "drop_db": layer.drop_db}
                    for layer in result.layers.layers}
        deployed = result.layers.deployed or tuple((layer.node, layer.op) for layer in result.layers.layers)
        rows = [{"name": node, "op": op, **compared.get(node, {})} for node, op in deployed]
    return section, clean(rows)
