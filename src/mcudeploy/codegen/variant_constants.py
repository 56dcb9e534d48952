"""Constants in the layout the chosen kernel variants read (re-ordered weights, biases with
the input offset folded in), for ``network_data.c`` and the calls.

Input: the deployment (graph, prepared parameters, kernel choice, the plan's weight regions)
and the constant symbol table. Output: :class:`VariantConstants`. Nothing is decided here:
each variant's ``prepare_constants(node, params)`` says what it reads at which input index
(:class:`~mcudeploy.kernels.KernelVariant`); this module only places the arrays:

* a constant whose only reader is that node keeps its symbol and region and is emitted
  with the variant's values instead (the flash holds one copy);
* a constant that other nodes read too, or an input the node does not have (a bias-less
  conv whose variant folds the input offset), becomes a new array in the region of the
  node's weights, and the call points at it (:attr:`VariantConstants.pointers`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .identifiers import IdentifierTable
from .kernel_calls import ConstArray

if TYPE_CHECKING:
    from ..deployment import Deployment
    from ..plan.memory_plan import MemoryPlan


@dataclass
class VariantConstants:
    values: dict[str, np.ndarray] = field(default_factory=dict)          # constant -> values to emit
    arrays: list[ConstArray] = field(default_factory=list)               # new arrays
    pointers: dict[str, dict[int, str]] = field(default_factory=dict)    # node -> input index -> symbol

    def apply(self, arrays: list[ConstArray], constants: IdentifierTable) -> list[ConstArray]:
        """``arrays`` (the graph's constants) with the variants' values, plus the new arrays."""
        by_symbol = {constants[name]: values for name, values in self.values.items()}
        replaced = [ConstArray(a.symbol, by_symbol[a.symbol], a.region, a.comment + " (kernel layout)")
                    if a.symbol in by_symbol else a for a in arrays]
        return replaced + self.arrays


def _readers(graph) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in graph.nodes:
        for value in node.inputs:
            if value is not None and value.const is not None:
                counts[value.name] = counts.get(value.name, 0) + 1
    return counts


def _weights_region(node, plan: MemoryPlan) -> str:
    weights = dict(plan.weights)
    for value in node.inputs[1:]:
        if value is not None and value.name in weights:
            return weights[value.name]
    return next(iter(sorted(set(weights.values()))), "FLASH")


def variant_constants(deployment: Deployment, constants: IdentifierTable) -> VariantConstants:
    """The arrays every node's chosen variant reads in place of its constants (module docstring)."""
    graph, plan = deployment.graph, deployment.plan
    readers = _readers(graph)
    result = VariantConstants()
    for node in graph.nodes:
        variant = deployment.kernels.variant(node)
        if variant.prepare_constants is None:
            continue
        for index, values in sorted(variant.prepare_constants(node, deployment.params[node.name]).items()):
            value = node.inputs[index] if index < len(node.inputs) else None
            if value is not None and value.const is not None and readers[value.name] == 1:
                result.values[value.name] = values
                continue
            symbol = constants[f"{node.name} input {index} {variant.name}"]
            result.arrays.append(ConstArray(symbol, values, _weights_region(node, plan),
                                            f"input {index} of {node.name} in the {variant.name} layout"))
            result.pointers.setdefault(node.name, {})[index] = symbol
    return result
