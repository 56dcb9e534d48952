"""NPU / CPU mapping: which node runs where, and why not on the NPU.

Public names: :func:`map_graph` (graph + target -> :class:`Mapping`: what the hardware could run),
:func:`executed_mapping` (-> the mapping of the generated code, one executor for every node),
:func:`partitions` / :func:`partition_graph` (runs of one device, as sub-graphs), :class:`Placement`,
:class:`Reason`, and the predicate registry :data:`PREDICATES` (:mod:`.predicates`).
"""
from .executor import MCUDEPLOY, VENDOR_NPU, check_executor, executed_mapping, executor_summary
from .mapper import CPU, NPU, Mapping, Placement, map_graph
from .partitions import Partition, partition_graph, partitions
from .predicates import PREDICATES, Reason, reasons_against

__all__ = ["CPU", "MCUDEPLOY", "NPU", "VENDOR_NPU", "Mapping", "PREDICATES", "Partition",
           "Placement", "Reason", "check_executor", "executed_mapping", "executor_summary", "map_graph", "partition_graph",
           "partitions", "reasons_against"]
