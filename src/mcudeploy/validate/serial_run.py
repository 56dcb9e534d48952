"""``validate --on serial:PORT``: run a deployment's generated code on a board (or QEMU with
its UART on a socket) through the serial validation firmware (``make serial``,
``harness_serial.c``) and the protocol of :mod:`.serial_link`.

The board must already run the firmware of this deployment (:mod:`.flash_tools` says which
flashing tool is installed); ``HELLO`` checks its input and output sizes first, so a board
running another network is one clear line, not a wrong comparison. Per inference the board
returns its outputs and the cycles it counted (DWT, or SysTick of the core clock); per layer
when the firmware was built with ``PROFILE=1`` and ``--per-layer-instructions`` is given.
"""
from __future__ import annotations

import logging

import numpy as np

from ..errors import BoardLinkError, UsageError
from ..mapping.mapper import node_macc
from .c_runner import CRunResult, read_outputs
from .serial_link import SerialLink

log = logging.getLogger(__name__)
PREFIX = "serial:"
TIMEOUT_BASE = 10.0
SLOWEST_MACC_PER_SECOND = 5e6


def is_serial(on: str | None) -> bool:
    return on is not None and on.startswith(PREFIX)


def sample_bytes(graph, feeds: dict[str, np.ndarray], index: int) -> bytes:
    """Every input's bytes of sample ``index``, little-endian, in input order (as the harness)."""
    return b"".join(np.ascontiguousarray(feeds[v.name][index], np.dtype(v.dtype.numpy).newbyteorder("<")).tobytes()
                    for v in graph.inputs)


def _check_board(info, graph, port: str, profile: bool) -> None:
    input_bytes, output_bytes = sum(v.nbytes for v in graph.inputs), sum(v.nbytes for v in graph.outputs)
    if (info.input_bytes, info.output_bytes) != (input_bytes, output_bytes):
        raise BoardLinkError(f"serial:{port}: the board runs another network (inputs {info.input_bytes} B, outputs "
                             f"{info.output_bytes} B; this model {input_bytes} B, {output_bytes} B): flash the "
                             "serial firmware generated from this model (make serial BOARD=...)")
    if profile and not info.layers:
        raise UsageError(f"--per-layer-instructions --on serial:{port}: the board's firmware counts no layers; "
                         "build it with make serial PROFILE=1 and flash it")


def run_serial(deployment, feeds: dict[str, np.ndarray], on: str, *, profile: bool = False,
               timeout: float | None = None) -> CRunResult:
    """Outputs and cycles of every sample of ``feeds`` run on the board at ``on`` (``serial:PORT``)."""
    port = on[len(PREFIX):]
    graph = deployment.graph
    count = len(next(iter(feeds.values())))
    macc = sum(node_macc(node) for node in graph.nodes)
    timeout = timeout or TIMEOUT_BASE + macc / SLOWEST_MACC_PER_SECOND
    outputs, cycles, layers = b"", [], []
    with SerialLink(port, timeout) as link:
        info = link.hello()
        _check_board(info, graph, port, profile)
        log.info("serial:%s: board protocol %d, %d-byte inputs, %s timer", port, info.version,
                 info.input_bytes, info.timer)
        for index in range(count):
            result = link.run(sample_bytes(graph, feeds, index), f"during sample {index}")
            if result.status != 0:
                raise BoardLinkError(f"serial:{port}: network_run failed on the board on sample {index} "
                                     f"(status {result.status})")
            if len(result.outputs) != info.output_bytes:
                raise BoardLinkError(f"serial:{port}: the board returned {len(result.outputs)} output bytes, "
                                     f"expected {info.output_bytes}")
            outputs += result.outputs
            cycles.append(result.cycles)
            layers.append(result.layer_cycles)
    run = CRunResult(read_outputs(graph, outputs, count), cycles=cycles, timer=info.timer)
    if profile:
        run.layer_instructions = layers
    return run
