"""Constants in the layout the chosen kernel variants read (re-ordered weights, biases with
the input offset folded in), for ``network_data.c`` and the calls.

Input: the deployment (graph, prepared parameters, kernel choice, the plan's weight regions)
and the constant symbol table. Output: :class:`VariantConstants`. Nothing is decided here:
each variant's ``prepare_constants(node, params)`` says what it reads at which input index
(:class:`~mcudeploy.kernels.KernelVariant`, listed by :mod:`mcudeploy.kernels.emitted_arrays`,
which the ledger counts too); this module only names the arrays:

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

from ..kernels.emitted_arrays import layout_readers, variant_layouts, weights_region
from .identifiers import IdentifierTable
from .kernel_calls import ConstArray

if TYPE_CHECKING:
    from ..deployment import Deployment


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


def variant_constants(deployment: Deployment, constants: IdentifierTable) -> VariantConstants:
    """The arrays every node's chosen variant reads in place of its constants (module docstring)."""
    graph, plan = deployment.graph, deployment.plan
    counts = layout_readers(graph, deployment.kernels, deployment.params)
    result = VariantConstants()
    for node in graph.nodes:
        variant = deployment.kernels.variant(node)
        replaced, added = variant_layouts(node, deployment.kernels, deployment.params.get(node.name), counts)
        result.values.update(replaced)
        for index, values in added.items():
            symbol = constants[f"{node.name} input {index} {variant.name}"]
            result.arrays.append(ConstArray(symbol, values, weights_region(node, dict(plan.weights)),
                                            f"input {index} of {node.name} in the {variant.name} layout"))
            result.pointers.setdefault(node.name, {})[index] = symbol
    return result
