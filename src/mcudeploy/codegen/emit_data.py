"""``network_data.h`` / ``network_data.c`` and the linker-script fragment ``network_sections.ld``.

Input: the graph's constants that nodes read (weights, biases, constant operands), the
per-channel requantization arrays of the kernel calls (:class:`~.kernel_calls.ConstArray`),
the plan's region of every constant (``plan.weights[name]``) and the target (for the
region's kind). Output: text. Each array is ``const``, aligned to :data:`ALIGNMENT` bytes and
placed with ``__attribute__((section(...)))`` in the plan's region:

* a read-only region (flash): section ``.rodata.mcu_weights.<REGION>``;
* a writable region (an SRAM copy): section ``.data.mcu_weights.<REGION>``, which the
  start-up code copies from flash like any initialised data.

The fragment lists one output section per region for the board's linker script.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import UnsupportedError
from ..ir import Graph
from ..kernels.emitted_arrays import ALIGNMENT, same_bytes_key
from ..targets import TargetError
from .c_literals import c_array_body, c_type
from .identifiers import IdentifierTable, clean, comment_text
from .kernel_calls import ConstArray
from .templates import render

if TYPE_CHECKING:
    from ..plan.memory_plan import MemoryPlan
    from ..targets import Target



@dataclass(frozen=True)
class DataSection:
    region: str
    section: str          # e.g. .rodata.mcu_weights.FLASH
    writable: bool


def region_writable(target: Target | None, region: str) -> bool:
    """Whether the target says ``region`` is writable (no target: read-only)."""
    if target is None:
        return False
    try:
        return target.region(region).writable
    except TargetError:  # a region name only the plan knows (e.g. its default "arena")
        return False


def section_of(target: Target | None, region: str) -> DataSection:
    writable = region_writable(target, region)
    kind = ".data" if writable else ".rodata"
    return DataSection(region, f"{kind}.mcu_weights.{clean(region) or 'default'}", writable)


def constant_arrays(graph: Graph, plan: MemoryPlan, symbols: IdentifierTable) -> list[ConstArray]:
    """One :class:`ConstArray` per constant a node reads, in first-use order."""
    arrays, seen = [], set()
    for node in graph.nodes:
        for value in node.inputs:
            if value is None or value.const is None or value.name in seen:
                continue
            seen.add(value.name)
            if value.name not in plan.weights:
                raise UnsupportedError(f"constant {value.name!r} (read by node {node.name!r}) has no "
                                       "region in the memory plan; re-run the planner on this graph")
            arrays.append(ConstArray(symbols[value.name], value.const, plan.weights[value.name],
                                     f"{value.type_str()} {value.name}"))
    return arrays


def _entries(arrays: list[ConstArray], target: Target | None) -> tuple[list[dict], list[dict]]:
    """(arrays to define, same-bytes duplicates): an array equal to an earlier one in the same
    region (the per-tile copies of a tiled layer's requantization or kernel-layout arrays) is
    the earlier one under a second name (``#define`` in network_data.h), not a second copy."""
    entries: list[dict[str, Any]] = []
    duplicates: list[dict[str, str]] = []
    first: dict[tuple[str, str, bytes], str] = {}
    for array in arrays:
        values = np.ascontiguousarray(array.values.reshape(-1))
        key = same_bytes_key(values, array.region)
        if key in first:
            duplicates.append({"symbol": array.symbol, "same_as": first[key]})
            continue
        first[key] = array.symbol
        entries.append({"symbol": array.symbol, "ctype": c_type(values.dtype), "count": max(values.size, 1),
                        "body": c_array_body(values), "comment": comment_text(array.comment),
                        "section": section_of(target, array.region).section, "bytes": values.nbytes})
    return entries, duplicates


def render_data(arrays: list[ConstArray], target: Target | None, model: str, alignment: int = ALIGNMENT,
                arena_sections: dict[str, str] | None = None) -> dict[str, str]:
    """``{"network_data.h": ..., "network_data.c": ..., "network_sections.ld": ...}``;
    ``arena_sections``: plan region -> section of the arena array placed there."""
    entries, duplicates = _entries(arrays, target)
    sections = sorted({section_of(target, a.region) for a in arrays}, key=lambda s: s.section)
    context = {"entries": entries, "duplicates": duplicates, "alignment": alignment, "model": comment_text(model),
               "sections": sections, "total_bytes": sum(e["bytes"] for e in entries),
               "arenas": [{"region": region, "section": section}
                          for region, section in sorted((arena_sections or {}).items())]}
    return {"network_data.h": render("network_data.h.j2", context),
            "network_data.c": render("network_data.c.j2", context),
            "network_sections.ld": render("network_sections.ld.j2", context)}
