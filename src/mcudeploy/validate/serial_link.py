"""The host side of the serial validation protocol (docs/serial-protocol.md) over pyserial.

A frame: ``A5 5A``, type (1 byte), length (u32 LE), payload, CRC-32 (IEEE, ``zlib.crc32``,
u32 LE) of type + length + payload. Board -> host: ``BOOT`` (0x80) at start-up, ``INFO``
(0x81), ``RESULT`` (0x82), ``ERROR`` (0xFF); host -> board: ``HELLO`` (0x01), ``RUN`` (0x02).

Ports: ``serial:/dev/ttyACM0`` (opened exclusively, 115200 baud) or any pyserial URL
(``serial:socket://127.0.0.1:5555``, or ``serial:tcp://127.0.0.1:5555``, for QEMU's ``-serial
tcp:...,server``). Every failure is
one :class:`~mcudeploy.errors.BoardLinkError` line: a port that does not exist or is busy,
no reply in time, a frame whose checksum does not match, an ``ERROR`` from the board, a
``BOOT`` in the middle of a session (the board reset).
"""
from __future__ import annotations

import struct
import time
import zlib
from dataclasses import dataclass

from ..errors import BoardLinkError, UsageError
from ..extras import require

SYNC = b"\xa5\x5a"
BOOT, INFO, RESULT, ERROR = 0x80, 0x81, 0x82, 0xFF
HELLO, RUN = 0x01, 0x02
NAMES = {BOOT: "BOOT", INFO: "INFO", RESULT: "RESULT", ERROR: "ERROR"}
BOARD_ERRORS = {1: "a frame with a bad checksum", 2: "a frame of the wrong length", 3: "an unknown frame type"}
MAX_PAYLOAD = 64 << 20
BAUD_RATE = 115200
TIMERS = {0: "SysTick", 1: "DWT"}


def encode_frame(kind: int, payload: bytes = b"") -> bytes:
    body = struct.pack("<BI", kind, len(payload)) + payload
    return SYNC + body + struct.pack("<I", zlib.crc32(body))


@dataclass(frozen=True)
class BoardInfo:
    version: int
    inputs: int
    outputs: int
    input_bytes: int
    output_bytes: int
    layers: int         # per-layer cycles returned (0: a firmware built without PROFILE=1)
    timer: str


@dataclass(frozen=True)
class Result:
    status: int
    cycles: int
    layer_cycles: list[int]
    outputs: bytes


class SerialLink:
    """One open port speaking the protocol (module docstring)."""

    def __init__(self, port: str, timeout: float = 10.0, connection=None) -> None:
        self.port, self.timeout = port, timeout
        self.connection = connection if connection is not None else _open(port, timeout)

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> "SerialLink":
        return self

    def __exit__(self, *_) -> None:
        self.close()

    def _read(self, count: int, deadline: float) -> bytes:
        data = b""
        while len(data) < count:
            if time.monotonic() > deadline:
                raise BoardLinkError(f"serial:{self.port}: no reply from the board within {self.timeout:g} s "
                                     "(is the serial firmware flashed and running? make serial BOARD=...)")
            data += self.connection.read(count - len(data))
        return data

    def receive(self) -> tuple[int, bytes]:
        """The next frame (type, payload), its checksum checked."""
        deadline = time.monotonic() + self.timeout
        window = b""
        while window != SYNC:
            window = (window + self._read(1, deadline))[-2:]
        header = self._read(5, deadline)
        kind, length = struct.unpack("<BI", header)
        if kind not in NAMES or length > MAX_PAYLOAD:
            raise BoardLinkError(f"serial:{self.port}: corrupted frame from the board (type 0x{kind:02X}, "
                                 f"length {length}); check the baud rate and the cable, then run again")
        payload = self._read(length, deadline)
        (crc,) = struct.unpack("<I", self._read(4, deadline))
        if crc != zlib.crc32(header + payload):
            raise BoardLinkError(f"serial:{self.port}: corrupted {NAMES[kind]} frame from the board (checksum "
                                 f"0x{crc:08X}, computed 0x{zlib.crc32(header + payload):08X}); a byte was lost "
                                 "or changed on the link: run again, or lower the baud rate")
        return kind, payload

    def request(self, kind: int, payload: bytes, expect: int, during: str) -> bytes:
        self.connection.write(encode_frame(kind, payload))
        self.connection.flush()
        while True:
            reply, data = self.receive()
            if reply == expect:
                return data
            if reply == ERROR:
                code = struct.unpack("<I", data[:4])[0] if len(data) >= 4 else 0
                raise BoardLinkError(f"serial:{self.port}: the board received {BOARD_ERRORS.get(code, f'error {code}')}"
                                     f" {during}; the link loses or changes bytes: run again, or lower the baud rate")
            if reply == BOOT and expect != INFO:
                raise BoardLinkError(f"serial:{self.port}: the board reset {during} (a BOOT frame arrived); "
                                     "check its power and watchdog, then run again")

    def hello(self) -> BoardInfo:
        """The board's sizes (a BOOT frame before INFO is the start-up one, skipped)."""
        data = self.request(HELLO, b"", INFO, "during HELLO")
        version, inputs, outputs, input_bytes, output_bytes, layers, timer = struct.unpack("<7I", data[:28])
        return BoardInfo(version, inputs, outputs, input_bytes, output_bytes, layers,
                         TIMERS.get(timer, f"timer {timer}"))

    def run(self, inputs: bytes, during: str) -> Result:
        data = self.request(RUN, inputs, RESULT, during)
        status, cycles, layers = struct.unpack("<3I", data[:12])
        layer_cycles = list(struct.unpack(f"<{layers}I", data[12:12 + 4 * layers]))
        return Result(status, cycles, layer_cycles, data[12 + 4 * layers:])


def _open(port: str, timeout: float):
    serial = require("serial", "board", "validate --on serial:PORT")
    if not port:
        raise UsageError("--on serial:: give the port, e.g. serial:/dev/ttyACM0 or serial:socket://127.0.0.1:5555")
    if port.startswith("tcp://"):           # QEMU's own spelling (-serial tcp:HOST:PORT): pyserial's socket://
        port = "socket://" + port[len("tcp://"):]
    try:
        if "://" in port:
            return serial.serial_for_url(port, baudrate=BAUD_RATE, timeout=min(timeout, 0.5))
        return serial.Serial(port, baudrate=BAUD_RATE, timeout=min(timeout, 0.5), exclusive=True)
    except (serial.SerialException, OSError, ValueError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        busy = "busy" in reason.lower() or "lock" in reason.lower()
        raise BoardLinkError(f"serial:{port}: cannot open the port ({reason}); "
                             + ("another program holds it: close it (a serial monitor, a debugger) and run again"
                                if busy else "check the cable and the port name (ls /dev/ttyACM* /dev/ttyUSB*)")) from None
