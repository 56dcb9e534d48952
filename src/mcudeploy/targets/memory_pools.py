"""Memory regions from ST memory-pool descriptions: Neural-ART ``.mpool`` files (ST Edge AI
``--load-mpool`` / ``memory_pool`` of a Neural-ART profile) and the classic X-CUBE-AI
``--memory-pool`` JSON.

Input: a JSON file. Output: a tuple of :class:`~mcudeploy.targets.model.MemoryRegion`.

What is read (ST's format is not formally specified; this reading is tolerant):

* the pool list at ``memory.mempools`` (``.mpool`` and recent X-CUBE-AI files), or a
  top-level ``mempools`` / ``memory_pools`` list, or a top-level list;
* per pool: ``name`` (else ``fname``); address from ``offset`` (or ``address``) and
  ``size``, each either a number, a hex / decimal string, or ``{"value": ...,
  "magnitude": "BYTES" | "KBYTES" | "MBYTES"}``;
* ``prop.rights``: ``ACC_READ`` -> read-only, ``ACC_WRITE`` / ``ACC_READ_WRITE`` -> read/write;
* ``prop.byteWidth`` and ``prop.freqRatio``: our reading is "bytes per memory cycle" and
  "NPU clock / memory clock", so bandwidth = byteWidth / freqRatio x ``reference_clock_hz``
  (the NPU clock, 1 GHz on STM32N6). This is an estimate, recorded in the region's note;
* ``prop.latency`` ``LOW`` / ``MID`` / ``HIGH`` -> 1 / 10 / 50 cycles (an estimate: ST gives
  only these classes);
* the kind: read-only -> flash; address >= 0x6000_0000 (external memory space of
  Cortex-M) and writable -> psram; else sram.

Pools of size 0 (ST's way to switch a pool off) and merged pools (with ``subpools``) are
skipped with a log message. Everything else (``fname``, ``fformat``, power figures,
``cacheinfo``, ``params``) is ignored.
"""
from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

from ..text_inputs import read_json
from .model import MemoryRegion, TargetError, check_regions
from .schema import check_identifier

log = logging.getLogger(__name__)

MAGNITUDES = {"BYTES": 1, "KBYTES": 1024, "MBYTES": 1024 ** 2, "GBYTES": 1024 ** 3}
LATENCY_CYCLES = {"LOW": 1, "MID": 10, "HIGH": 50}
RIGHTS = {"ACC_READ": "r", "ACC_WRITE": "rw", "ACC_READ_WRITE": "rw", "ACC_READWRITE": "rw"}
EXTERNAL_MEMORY_START = 0x6000_0000
MAX_QUANTITY = 2 ** 64


def load_memory_pools(path: Path, reference_clock_hz: float = 1e9) -> tuple[MemoryRegion, ...]:
    """The regions described by the memory-pool file at ``path`` (checked for overlap)."""
    document = read_json(path, "memory-pool file", error=TargetError)
    pools = _pool_list(document, path)
    regions = []
    for index, pool in enumerate(pools):
        region = _region(pool, index, path, reference_clock_hz)
        if region is not None:
            regions.append(region)
    if not regions:
        raise TargetError(f"{path}: no memory pool with a non-zero size; describe at least one")
    check_regions(tuple(regions), str(path))
    return tuple(regions)


def _pool_list(document: Any, path: Path) -> list[Any]:
    if isinstance(document, list):
        return document
    if isinstance(document, dict):
        memory = document.get("memory")
        for candidate in (memory.get("mempools") if isinstance(memory, dict) else None,
                          document.get("mempools"), document.get("memory_pools")):
            if isinstance(candidate, list):
                return candidate
    raise TargetError(f"{path}: no memory pool list found; expected \"memory\": "
                      "{\"mempools\": [...]} (ST .mpool format) or a \"memory_pools\" list")


def _quantity(raw: Any, what: str, where: str) -> int:
    """A byte count or address from ``12``, ``"0x3420_0000"`` or ``{"value", "magnitude"}``."""
    magnitude = 1
    if isinstance(raw, dict):
        unit = str(raw.get("magnitude", "BYTES")).upper()
        if unit not in MAGNITUDES:
            raise TargetError(f"{where}: {what} magnitude {unit!r} is not one of "
                              f"{', '.join(MAGNITUDES)}")
        magnitude, raw = MAGNITUDES[unit], raw.get("value")
    is_int = isinstance(raw, int) and not isinstance(raw, bool)
    try:
        if not is_int and not isinstance(raw, str):
            raise ValueError
        number = raw if is_int else int(raw.replace("_", ""), 0)
    except ValueError:
        raise TargetError(f"{where}: {what} {str(raw)[:40]!r} is not a number (write 448 or "
                          "\"0x34200000\")") from None
    if number < 0:
        raise TargetError(f"{where}: {what} is negative ({number}); it must be >= 0")
    if number * magnitude > MAX_QUANTITY:
        raise TargetError(f"{where}: {what} {number * magnitude} is beyond 2**64 bytes")
    return number * magnitude


def _region(pool: Any, index: int, path: Path, clock_hz: float) -> MemoryRegion | None:
    if not isinstance(pool, dict):
        raise TargetError(f"{path}: memory pool #{index + 1} is not an object: {pool!r}")
    name = pool.get("name") or pool.get("fname")
    where = f"{path}: memory pool #{index + 1}" + (f" ({name!r})" if name else "")
    if not isinstance(name, str) or not name:
        raise TargetError(f"{where}: missing key 'name'")
    check_identifier(name, "name", f"memory pool #{index + 1}", str(path))
    if "subpools" in pool:
        log.info("%s: skipping merged pool %r (its sub-pools are listed separately)", path, name)
        return None
    if "size" not in pool:
        raise TargetError(f"{where}: missing key 'size'")
    if "offset" not in pool and "address" not in pool:
        raise TargetError(f"{where}: missing key 'offset' (the pool's start address)")
    base = _quantity(pool.get("offset", pool.get("address")), "offset", where)
    size = _quantity(pool["size"], "size", where)
    if size == 0:
        log.info("%s: skipping pool %r of size 0 (switched off)", path, name)
        return None
    prop = pool.get("prop") or {}
    if not isinstance(prop, dict):
        raise TargetError(f"{where}: 'prop' must be an object like {{\"rights\": \"ACC_WRITE\"}}, "
                          f"got {str(prop)[:40]!r}")
    return _with_properties(name, base, size, prop, where, clock_hz)


def _with_properties(name: str, base: int, size: int, prop: dict[str, Any], where: str,
                     clock_hz: float) -> MemoryRegion:
    rights = str(prop.get("rights", "ACC_WRITE")).upper()
    if rights not in RIGHTS:
        raise TargetError(f"{where}: prop.rights {rights!r} is not one of {', '.join(RIGHTS)}")
    access = RIGHTS[rights]
    kind = "flash" if access == "r" else ("psram" if base >= EXTERNAL_MEMORY_START else "sram")
    bandwidth, note = 0.0, "from memory-pool file"
    width: Any = prop.get("byteWidth")   # file values of any type, checked below
    ratio: Any = prop.get("freqRatio")
    if (isinstance(width, (int, float)) and isinstance(ratio, (int, float)) and ratio > 0
            and math.isfinite(width / ratio * clock_hz) and width >= 0):
        bandwidth = width / ratio * clock_hz
        note += (f"; bandwidth estimate = byteWidth {width} / freqRatio {ratio} x "
                 f"{clock_hz / 1e6:g} MHz")
    latency = LATENCY_CYCLES.get(str(prop.get("latency", "")).upper(), 0)
    known = bandwidth > 0   # keep ST's figures for the NPU estimator (bytes per NPU cycle)
    return MemoryRegion(name, base, size, kind, access, bandwidth, latency, "both", True, note,
                        byte_width=float(width) if known else 0.0, freq_ratio=float(ratio) if known else 0.0)
