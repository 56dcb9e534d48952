"""Write a memory plan into a copy of a .tflite model as TensorFlow Lite Micro's offline plan.

Input: the source .tflite, a :class:`~mcudeploy.plan.memory_plan.MemoryPlan` of the graph
imported from it, planned in the file's operator order (TFLM runs the operators in that
order, so the lifetimes behind the offsets must be the same). Output: the same model with
a metadata entry TFLM's ``AllocationInfoBuilder`` reads (see TFLM's
``docs/memory_management.md``, "Offline planned tensor allocations"):

    metadata name  "OfflineMemoryAllocation"  ->  buffer of little-endian int32:
    [version = 0, subgraph index, n = number of tensors of the subgraph,
     offset of tensor 0, ..., offset of tensor n-1]      (-1: planned online by TFLM)

Offsets are bytes from the start of the arena's head. Constants get -1 (they are not in
the arena); a tensor the plan does not know (renamed or added by the importer) gets -1 and
is placed by TFLM around the fixed ones. Existing ``OfflineMemoryAllocation`` entries are
replaced. The flatbuffer is rewritten with the schema's object API (``ai_edge_litert``).
"""
from __future__ import annotations

import ctypes
import logging
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import flatbuffers
import numpy as np

from ..errors import ModelFormatError, UsageError
from ..safe_io import write_bytes  # atomic; refuses a folder or the source itself

logger = logging.getLogger(__name__)
METADATA_NAME = "OfflineMemoryAllocation"
FORMAT_VERSION = 0


@dataclass(frozen=True)
class OfflineExport:
    path: Path
    tensors: int          # tensors of the subgraph
    planned: int          # tensors given a fixed offset
    online: list[str]     # non-constant tensors left to TFLM (-1)


def offline_offsets(tensor_names: list[str], constant: list[bool], plan) -> tuple[list[int], list[str]]:
    """One offset per tensor (-1 for constants and tensors the plan lacks) and the names left online."""
    offsets, online = [], []
    for name, is_constant in zip(tensor_names, constant):
        placement = plan.tensors.get(name)
        if placement is None or is_constant:
            offsets.append(-1)
            if not is_constant:
                online.append(name)
        else:
            offsets.append(int(placement.offset))
    return offsets, online


def _schema():
    """The TFLite schema with its object API (``ModelT``), from the ``ai-edge-litert`` package:
    the ``tflite`` package mcudeploy depends on reads flatbuffers but cannot re-pack one."""
    try:
        from ai_edge_litert import schema_py_generated
    except ImportError:
        raise UsageError("--export-tflm rewrites the .tflite file with the TFLite schema of the "
                         "ai-edge-litert package, which is not installed: pip install ai-edge-litert") from None
    return schema_py_generated


def check_export_available() -> None:
    """:class:`UsageError` (before any work) when the export cannot run on this install."""
    _schema()


def export_tflm_offline(source: Path, plan, destination: Path, subgraph: int = 0) -> OfflineExport:
    """Copy ``source`` to ``destination`` with ``plan``'s offsets as the offline plan."""
    schema = _schema()
    source, destination = Path(source), Path(destination)
    if source.suffix.lower() != ".tflite":
        raise UsageError(f"--export-tflm needs a .tflite model, got {source}")
    try:
        model = schema.ModelT.InitFromPackedBuf(bytearray(source.read_bytes()), 0)
    except Exception as error:   # a damaged flatbuffer raises anything from struct / index errors
        raise ModelFormatError(f"{source}: cannot read the TFLite flatbuffer ({error})") from None
    graph = model.subgraphs[subgraph]
    names = [t.name.decode() if isinstance(t.name, bytes) else str(t.name) for t in graph.tensors]
    constant = [_is_constant(model, t) for t in graph.tensors]
    offsets, online = offline_offsets(names, constant, plan)
    data = np.array([FORMAT_VERSION, subgraph, len(offsets), *offsets], dtype="<i4")
    buffer = schema.BufferT()
    buffer.data = np.frombuffer(data.tobytes(), dtype=np.uint8)
    model.buffers.append(buffer)
    entry = schema.MetadataT()
    entry.name, entry.buffer = METADATA_NAME, len(model.buffers) - 1
    model.metadata = [m for m in (model.metadata or []) if _name(m) != METADATA_NAME] + [entry]
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    write_bytes(destination, bytes(builder.Output()), "--export-tflm")
    if online:
        logger.warning("%d tensor(s) not in the plan are left to TFLM's online planner: %s",
                       len(online), ", ".join(online[:5]))
    return OfflineExport(destination, len(offsets), len(offsets) - len(online) - sum(constant), online)


def _is_constant(model, tensor) -> bool:
    buffer = model.buffers[tensor.buffer] if 0 < tensor.buffer < len(model.buffers) else None
    return buffer is not None and buffer.data is not None and len(buffer.data) > 0


def _name(metadata) -> str:
    name = metadata.name
    return name.decode() if isinstance(name, bytes) else str(name)


def tflm_arena_head(interpreter) -> int:
    """The "Arena allocation head" bytes a tflite-micro ``Interpreter`` reports.
    ``print_allocations()`` prints from C (stderr in the pip build, stdout in others), so
    both file descriptors are captured and C's stdio buffers flushed before reading."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 1)
        os.dup2(capture.fileno(), 2)
        try:
            interpreter.print_allocations()
            ctypes.CDLL(None).fflush(None)
        finally:
            for fd, target in zip(saved, (1, 2)):
                os.dup2(fd, target)
                os.close(fd)
        capture.seek(0)
        text = capture.read().decode(errors="replace")
    match = re.search(r"Arena allocation head (\d+) bytes", text)
    if match is None:
        raise RuntimeError(f"no arena figure in TFLM's allocation report: {text[:200]!r}")
    return int(match.group(1))
