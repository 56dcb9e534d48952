"""Hardware targets: CPU core, optional NPU and memory regions, described as data files.

Public names: :func:`load_target` (a built-in name or a ``.toml`` path),
:func:`builtin_names`, :func:`load_memory_pools` (ST ``.mpool`` / X-CUBE-AI memory-pool
JSON -> regions), and the records :class:`Target`, :class:`Core`, :class:`Npu`,
:class:`MemoryRegion`, with :class:`TargetError` for a bad description.
The file format is documented in ``docs/targets.md`` and :mod:`.loader`.
"""
from .loader import builtin_names, load_target, parse_target
from .memory_pools import load_memory_pools
from .model import Core, MemoryRegion, Npu, Target, TargetError, check_regions

__all__ = ["Core", "MemoryRegion", "Npu", "Target", "TargetError", "builtin_names",
           "check_regions", "load_memory_pools", "load_target", "parse_target"]
