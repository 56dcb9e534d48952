"""Who runs the deployed nodes: the hardware mapping -> the mapping of the generated code.

Input: the :class:`~.mapper.Mapping` of :func:`~.mapper.map_graph` (what the target's NPU
could take), the ``executor`` of the options and the target. Output: the mapping of the code
the deployment produces, one executor for every node:

* ``mcudeploy`` (the default): mcudeploy's C code. mcudeploy writes CPU kernels only (no NPU
  command streams), so on an NPU target every node runs on the CPU; a node the NPU would have
  taken says so (reason ``executor-cpu``: "with --executor vendor-npu it would run on the
  NPU"), a node the NPU refuses keeps the mapper's reasons;
* ``vendor-npu``: the vendor's NPU compiler (ST Edge AI on the STM32N6) runs the NPU nodes
  from the hand-off ``generate`` writes; the mapping is the hardware mapping as it is.

``vendor-npu`` on a target without an NPU is a :class:`~mcudeploy.errors.UsageError`.
"""
from __future__ import annotations

import math

from ..errors import UsageError
from ..targets import Target
from .mapper import CPU, NPU, Mapping, Placement
from .predicates import Reason

MCUDEPLOY, VENDOR_NPU = "mcudeploy", "vendor-npu"


def check_executor(executor: str, target: Target | None) -> None:
    """One line when ``executor`` cannot run on ``target``."""
    if executor == VENDOR_NPU and (target is None or target.npu is None):
        where = f"target {target.name!r} has no NPU" if target is not None else "no --target given"
        raise UsageError(f"--executor vendor-npu: {where}; use --executor mcudeploy (the default, "
                         "mcudeploy's CPU code) or an NPU target such as stm32n6")


def executed_mapping(hardware: Mapping, executor: str, target: Target) -> Mapping:
    """The device of every node in the code the deployment produces (module docstring)."""
    check_executor(executor, target)
    if executor == VENDOR_NPU or target.npu is None:
        return Mapping(hardware.target, list(hardware.placements), executor)
    placements = [placement if placement.device == CPU else _on_cpu(placement, target)
                  for placement in hardware.placements]
    return Mapping(hardware.target, placements, MCUDEPLOY)


def _on_cpu(placement: Placement, target: Target) -> Placement:
    assert placement.device == NPU and target.npu is not None
    reason = Reason("executor-cpu", f"node {placement.node!r} ({placement.op}) runs as mcudeploy's "
                                    f"{target.core.name} code (executor mcudeploy); with --executor "
                                    f"vendor-npu it would run on the {target.npu.name}")
    return Placement(placement.node, placement.op, CPU, placement.macc, (reason,))


def share_text(rate: float) -> str:
    """``0.99994 -> '99.99 %'``: rounded down, so that a node left on the CPU never shows 100 %."""
    return f"{math.floor(rate * 1e4) / 100:.2f} %"


def executor_summary(mapping: Mapping, hardware: Mapping | None, target: Target) -> str:
    """One line: who runs the nodes, and on an NPU target what the other executor would do."""
    core = target.core.name
    if target.npu is None or hardware is None:
        return f"executor {mapping.executor}: every node runs as mcudeploy's {core} code"
    npu_nodes, total = len(hardware.on(NPU)), len(hardware.placements)
    share = f"{share_text(hardware.macc_rate)} of the MACC"
    if mapping.executor == MCUDEPLOY:
        return (f"executor mcudeploy: all {total} nodes run as mcudeploy's {core} code (mcudeploy writes no NPU "
                f"code); with --executor vendor-npu {npu_nodes} of them ({share}) would run on the {target.npu.name}")
    return (f"executor vendor-npu: {npu_nodes} of {total} nodes ({share}) run on the {target.npu.name}, compiled "
            f"by the vendor's NPU compiler from the hand-off 'generate' writes; {total - npu_nodes} run as "
            f"mcudeploy's {core} code")
