"""validate --on serial:PORT: the serial firmware of the generated harness under QEMU with its
UART on a TCP socket, the host side over pyserial's socket:// URL: bit-exact outputs and cycles
per inference on shared int8 models; a corrupted frame, a timeout, a board reset, a port that
does not exist or is busy: one clear BoardLinkError line each."""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
import zlib

import pytest

from conftest import shared_model
from mcudeploy.cli.main import main
from mcudeploy.driver import deploy
from mcudeploy.errors import BoardLinkError, UsageError
from mcudeploy.options import DeploymentOptions
from mcudeploy.validate.c_runner import generate_for_run, run_command
from mcudeploy.validate.generated_code import check_generated_code, code_target, random_integer_feeds
from mcudeploy.validate.serial_link import BOOT, RESULT, RUN, SerialLink, encode_frame

serial = pytest.importorskip("serial")
HAVE_ARM = all(shutil.which(tool) for tool in ("arm-none-eabi-gcc", "qemu-system-arm", "make"))
needs_qemu = pytest.mark.skipif(not HAVE_ARM, reason="arm-none-eabi-gcc / qemu-system-arm missing: "
                                "tools/install_toolchain.sh")
BOARDS = {"mps2-an386": "mps2-an386", "mps3-an547": "mps3-an547"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_listening(port: int, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise AssertionError(f"QEMU did not listen on {port}")


@contextlib.contextmanager
def qemu_board(elf, board: str):
    """QEMU running ``elf`` with UART0 on a TCP server and its monitor on another: (uart, monitor)."""
    uart, monitor = _free_port(), _free_port()
    process = subprocess.Popen(["qemu-system-arm", "-M", board, "-semihosting", "-nographic", "-icount", "shift=0",
                                "-monitor", f"tcp:127.0.0.1:{monitor},server=on,wait=off",
                                "-serial", f"tcp:127.0.0.1:{uart},server=on,wait=off", "-kernel", str(elf)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(uart)
        yield uart, monitor
    finally:
        process.kill()
        process.wait(timeout=10)


def _firmware(tmp_path, model: str, board: str, profile: bool = False):
    deployment = deploy(shared_model(model), DeploymentOptions(target=board))
    project = generate_for_run(deployment, tmp_path / "project")
    run_command(["make", "-s", "serial", f"BOARD={board}", f"PROFILE={int(profile)}"], project, "make serial")
    return deployment, project / "build" / (f"{board}-profile" if profile else board) / "serial.elf"


@pytest.mark.slow
@needs_qemu
@pytest.mark.parametrize("model,board", [("mlperf_tiny/dscnn_kws_int8.tflite", "mps2-an386"),
                                         ("mlperf_tiny/resnet8_int8.tflite", "mps3-an547")])
def test_serial_validation_against_qemu_is_bit_exact_with_cycles(tmp_path, capsys, model, board):
    deployment, elf = _firmware(tmp_path, model, board)
    feeds = random_integer_feeds(deployment.graph, 3, 5)
    with qemu_board(elf, board) as (uart, _):
        check = check_generated_code(deployment, feeds, f"serial:socket://127.0.0.1:{uart}")
        code = main(["validate", str(shared_model(model)), "--on", f"serial:tcp://127.0.0.1:{uart}",   # QEMU's spelling
                     "--target", board, "--samples", "2"])
    printed = capsys.readouterr().out
    assert code == 0 and f"generated C code on serial:tcp://127.0.0.1:{uart}: bit-exact" in printed
    assert "flashing: no flashing tool found" in printed or "flashing: found" in printed
    assert check.bit_exact, check.describe()
    assert check.samples == 3 and len(check.cycles) == 3 and min(check.cycles) > 1000
    assert check.timer == "SysTick" and "cycles per inference" in check.describe()
    assert max(check.cycles) - min(check.cycles) <= 0.01 * min(check.cycles)   # same work per sample


@pytest.mark.slow
@needs_qemu
def test_per_layer_cycles_reset_and_corrupted_frame_against_qemu(tmp_path):
    deployment, elf = _firmware(tmp_path, "mlperf_tiny/dscnn_kws_int8.tflite", "mps2-an386", profile=True)
    feeds = random_integer_feeds(deployment.graph, 1, 2)
    with qemu_board(elf, "mps2-an386") as (uart, monitor):
        port = f"serial:socket://127.0.0.1:{uart}"
        check = check_generated_code(deployment, feeds, port, profile=True)
        layers = len(deployment.plan.order) - len(deployment.plan.elided_nodes)
        assert check.bit_exact and len(check.layer_instructions[0]) == layers
        assert sum(check.layer_instructions[0]) <= check.cycles[0]
        with SerialLink(port[len("serial:"):], timeout=10) as link:
            info = link.hello()
            frame = bytearray(encode_frame(RUN, bytes(info.input_bytes)))
            frame[20] ^= 0x40                    # a byte changed on the way to the board
            link.connection.write(bytes(frame))
            with pytest.raises(BoardLinkError, match="the board received a frame with a bad checksum"):
                link.request(RUN, b"", RESULT, "during sample 0")   # its bad length frame is never read
        with SerialLink(port[len("serial:"):], timeout=10) as link:
            info = link.hello()
            with socket.create_connection(("127.0.0.1", monitor)) as control:
                control.sendall(b"system_reset\n")
                time.sleep(0.5)
            with pytest.raises(BoardLinkError, match="the board reset during sample 1"):
                link.run(bytes(info.input_bytes), "during sample 1")


class ScriptedPort:
    """A pyserial-like connection that answers with scripted bytes."""

    def __init__(self, replies: bytes) -> None:
        self.replies, self.written = bytearray(replies), b""

    def read(self, count: int) -> bytes:
        data, self.replies[:count] = bytes(self.replies[:count]), b""
        return data

    def write(self, data: bytes) -> None:
        self.written += data

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_corrupted_frame_from_the_board_is_one_line():
    frame = bytearray(encode_frame(RESULT, bytes(20)))
    frame[10] ^= 1
    link = SerialLink("fake", timeout=1, connection=ScriptedPort(bytes(frame)))
    with pytest.raises(BoardLinkError, match=r"corrupted RESULT frame from the board \(checksum"):
        link.run(b"", "during sample 0")
    assert zlib.crc32(link.connection.written[2:-4]).to_bytes(4, "little") == link.connection.written[-4:]


def test_silent_board_times_out_with_one_line():
    link = SerialLink("fake", timeout=0.3, connection=ScriptedPort(b"noise"))
    with pytest.raises(BoardLinkError, match="no reply from the board within 0.3 s"):
        link.hello()


def test_boot_frame_mid_session_is_a_reset():
    link = SerialLink("fake", timeout=1, connection=ScriptedPort(encode_frame(BOOT, bytes(8))))
    with pytest.raises(BoardLinkError, match="the board reset during sample 4"):
        link.run(b"\x00", "during sample 4")


def test_missing_and_busy_ports_are_one_line():
    with pytest.raises(BoardLinkError, match="serial:/dev/ttyDOESNOTEXIST: cannot open the port"):
        SerialLink("/dev/ttyDOESNOTEXIST")
    with pytest.raises(BoardLinkError, match="cannot open the port"):
        SerialLink(f"socket://127.0.0.1:{_free_port()}")   # nothing listens
    controller, device = os.openpty()
    name = os.ttyname(device)
    try:
        with SerialLink(name, timeout=0.5):
            with pytest.raises(BoardLinkError, match="another program holds it"):
                SerialLink(name, timeout=0.5)
    finally:
        os.close(controller)
        os.close(device)


@pytest.mark.parametrize("text,ok", [("serial:/dev/ttyACM0", True), ("serial:socket://h:1", True),
                                     ("qemu-m4", True), ("serial:", False), ("uart0", False)])
def test_on_values(text, ok):
    if ok:
        assert code_target(text) == text
    else:
        with pytest.raises(UsageError, match="choose one of host, qemu-m4, qemu-m55, serial:PORT"):
            code_target(text)
