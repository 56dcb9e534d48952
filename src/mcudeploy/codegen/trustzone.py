"""``--trustzone``: the network as a TrustZone secure service, and a non-secure application
that calls it (Armv8-M Security Extension, built with ``-mcmse``; run under QEMU
``mps3-an547``, a Cortex-M55 with TrustZone).

Input: the graph (input / output names and byte sizes) and the board layout
(:data:`AN547_LAYOUT`, data). Output: text, by relative path::

    secure/network_secure.c        non-secure-callable entry network_secure_run(): checks both
                                   buffers with cmse_check_address_range (read for the input,
                                   read-write for the output), copies in, runs, copies out
    network_ns.h                   all that non-secure code sees (sizes, error codes, the entry)
    boards/<board>-secure.ld       secure image: vectors, code + weights, veneers, data + arena
    boards/<board>-ns.ld           non-secure image: vectors + code, data + stack
    boards/startup_secure.c        secure reset: .data / .bss, FPU for both worlds, SAU regions,
                                   NSCCFG, VTOR_NS and MSP_NS, then a BLXNS to the NS reset handler
    nonsecure/harness_ns.c         non-secure harness: semihosting samples -> network_secure_run
                                   -> outputs, instructions per call, then the refusal checks

The memory map (QEMU ``hw/arm/mps2-tz.c`` and ``armsse.c``; Arm AN547): every RAM appears
twice, at a non-secure address and at a secure alias 0x1000_0000 higher; the IDAU marks
address bit 28 = 1 secure, and within IDAU-non-secure space the SAU decides (an address no
SAU region covers is secure). The secure image lives at secure aliases only: vectors in ITCM
(0x1000_0000, also seen at 0 where the core fetches its reset vector), code and weights in
SRAM (0x1100_0000), data and the arena in ISRAM (0x3100_0000). The secure gateway veneers
(``.gnu.sgstubs``, one ``SG; B.W`` per entry, which must lie within 16 MB of the code) sit in
the last 4 KB of SRAM: an SAU region marks them non-secure callable, which counts there
because NSCCFG.CODENSC (security controller 0x5008_0014) makes the IDAU report region
0x1xxx_xxxx as NSC-capable. The non-secure image uses the upper half of ITCM (0x0004_0000)
for code and DTCM (0x2000_0000) for data, both marked non-secure by SAU regions. No image
touches the SRAM's memory protection controller (its blocks stay secure, the reset state).

Veneers: the secure link writes the import library ``veneers.o`` (``--cmse-implib
--out-implib``, absolute symbols at the veneers' addresses); the non-secure image links it.
``make ... IMPLIB_IN=old_veneers.o`` passes ``--in-implib`` so that a rebuilt secure image
keeps the veneer addresses a deployed non-secure image calls.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import UsageError
from ..ir import Graph
from .identifiers import comment_text
from .templates import render

SECURE_ALIAS_OFFSET = 0x1000_0000   # secure alias = non-secure address + this (IDAU bit 28)


@dataclass(frozen=True)
class Window:
    """One address window of an image: linker region name, base, bytes, the RAM behind it."""
    region: str
    base: int
    size: int
    memory: str

    @property
    def limit(self) -> int:
        """The last byte (SAU limit addresses are inclusive)."""
        return self.base + self.size - 1


@dataclass(frozen=True)
class TrustZoneLayout:
    """Where the two images go on one TrustZone board (module docstring)."""
    board: str
    secure_vectors: Window
    secure_code: Window
    veneers: Window
    secure_ram: Window
    nonsecure_code: Window
    nonsecure_ram: Window
    nsccfg_address: int          # security controller NSCCFG (bit 0 CODENSC: 0x1xxx_xxxx NSC-capable)
    stack_size: int = 0x8000

    def sau_regions(self) -> list[tuple[str, Window, bool]]:
        """(what, window, non-secure callable) of every SAU region the secure start-up sets."""
        return [("non-secure code", self.nonsecure_code, False), ("secure gateway veneers", self.veneers, True),
                ("non-secure data", self.nonsecure_ram, False)]


KIB, MIB = 1024, 1024 * 1024
AN547_LAYOUT = TrustZoneLayout(
    board="mps3-an547",
    secure_vectors=Window("S_VECTORS", 0x1000_0000, 1 * KIB, "ITCM"),
    secure_code=Window("S_CODE", 0x1100_0000, 2 * MIB - 4 * KIB, "SRAM"),
    veneers=Window("NSC", 0x111F_F000, 4 * KIB, "SRAM"),
    secure_ram=Window("S_RAM", 0x3100_0000, 4 * MIB, "ISRAM"),
    nonsecure_code=Window("NS_CODE", 0x0004_0000, 256 * KIB, "ITCM"),
    nonsecure_ram=Window("NS_RAM", 0x2000_0000, 512 * KIB, "DTCM"),
    nsccfg_address=0x5008_0014)
TRUSTZONE_LAYOUTS = {AN547_LAYOUT.board: AN547_LAYOUT}
NONSECURE_RESERVE = 16 * KIB   # non-secure RAM beyond the harness buffers: newlib, semihosting


def _hex(value: int) -> str:
    return f"0x{value:08X}"


def _window_context(window: Window) -> dict[str, str | int]:
    return {"region": window.region, "base": _hex(window.base), "size": window.size,
            "limit": _hex(window.limit), "memory": window.memory}


def layout_context(layout: TrustZoneLayout) -> dict[str, object]:
    """The layout as template values (addresses as ``0x%08X`` text)."""
    windows = {name: _window_context(getattr(layout, name)) for name in
               ("secure_vectors", "secure_code", "veneers", "secure_ram", "nonsecure_code", "nonsecure_ram")}
    regions = [{"number": number, "what": what, **_window_context(window), "callable": callable_}
               for number, (what, window, callable_) in enumerate(layout.sau_regions())]
    return {**windows, "board": layout.board, "sau_regions": regions, "nsccfg": _hex(layout.nsccfg_address),
            "stack_size": _hex(layout.stack_size),
            "probe_secure": _hex(layout.secure_ram.base),
            "probe_secure_nonsecure_alias": _hex(layout.secure_ram.base - SECURE_ALIAS_OFFSET),
            "probe_nonsecure_end": _hex(layout.nonsecure_ram.base + layout.nonsecure_ram.size)}


def _check_sizes(graph: Graph, layout: TrustZoneLayout) -> None:
    buffers = sum(v.nbytes for v in graph.inputs) + sum(v.nbytes for v in graph.outputs)
    room = layout.nonsecure_ram.size - layout.stack_size - NONSECURE_RESERVE
    if buffers > room:
        raise UsageError(f"--trustzone: the non-secure harness needs {buffers} bytes for the inputs and "
                         f"outputs, but {layout.board}'s non-secure RAM window ({layout.nonsecure_ram.memory}, "
                         f"{layout.nonsecure_ram.size} bytes) leaves {room}; the TrustZone board files "
                         "cannot hold this model's I/O")


def render_trustzone(graph: Graph, model: str, layout: TrustZoneLayout = AN547_LAYOUT) -> dict[str, str]:
    """Every TrustZone file of the project (module docstring), by relative path."""
    _check_sizes(graph, layout)
    context = {"model": comment_text(model),
               "inputs_bytes": sum(v.nbytes for v in graph.inputs),
               "outputs_bytes": sum(v.nbytes for v in graph.outputs),
               "inputs": comment_text(", ".join(f"{v.name} {v.type_str()}" for v in graph.inputs)),
               "outputs": comment_text(", ".join(f"{v.name} {v.type_str()}" for v in graph.outputs)),
               **layout_context(layout)}
    board = layout.board
    return {"secure/network_secure.c": render("network_secure.c.j2", context),
            "network_ns.h": render("network_ns.h.j2", context),
            f"boards/{board}-secure.ld": render("boards/trustzone.ld.j2", {**context, "secure": True}),
            f"boards/{board}-ns.ld": render("boards/trustzone.ld.j2", {**context, "secure": False}),
            "boards/startup_secure.c": render("boards/startup_secure.c.j2", context),
            "nonsecure/harness_ns.c": render("harness_ns.c.j2", context)}
