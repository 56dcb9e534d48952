"""NPU / CPU mapping: which node runs where, and why not on the NPU.

Public names: :func:`map_graph` (graph + target -> :class:`Mapping`), :class:`Placement`,
:class:`Reason`, and the predicate registry :data:`PREDICATES` (:mod:`.predicates`).
"""
from .mapper import CPU, NPU, Mapping, Placement, map_graph
from .predicates import PREDICATES, Reason, reasons_against

__all__ = ["CPU", "NPU", "Mapping", "PREDICATES", "Placement", "Reason", "map_graph",
           "reasons_against"]
