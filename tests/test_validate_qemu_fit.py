"""``validate --on qemu-m55`` of a network whose data overflow the board's RAM (a 256 x 256
U-Net's 8 MB arena, 4 MB ISRAM): the harness is linked again with RAM in the board's
external RAM (:func:`mcudeploy.validate.qemu.link_in_external_ram`), instead of failing with
the linker's "cannot move location counter backwards". The end-to-end run (minutes under
QEMU) is ``benchmarks/quantize_scale_bench.py --qemu``; here the linker-script rewrite and
the overflow detection are checked on the generated scripts."""
from __future__ import annotations

import re

import pytest

from mcudeploy.codegen import generate_files
from mcudeploy.codegen.boards import BOARDS
from mcudeploy.driver import deploy
from mcudeploy.validate import qemu
from test_uint8_io import edge_graph

LINKER_ERROR = ("/usr/bin/arm-none-eabi-ld:boards/mps3-an547.ld:61 cannot move location counter backwards "
                "(from 21880ad8 to 213f8000)")


@pytest.fixture(scope="module")
def files():
    return generate_files(deploy(edge_graph()))


def _memory(script: str) -> dict[str, tuple[int, str]]:
    return {name: (int(origin, 16), length) for name, origin, length in
            re.findall(r"^\s*(\w+) \(\w+\)\s*: ORIGIN = (0x[0-9A-Fa-f]+), LENGTH = (\S+)", script, re.M)}


def test_ram_moves_to_the_upper_half_of_external_ram(tmp_path, files):
    board = BOARDS["mps3-an547"]
    (tmp_path / "boards").mkdir()
    script = tmp_path / "boards" / "mps3-an547.ld"
    script.write_text(files["boards/mps3-an547.ld"])
    before = _memory(script.read_text())
    assert before["RAM"] == (0x2100_0000, "4M") and before["EXTERNAL"] == (0x6000_0000, "256M")
    assert qemu.link_in_external_ram(tmp_path, board)
    after = _memory(script.read_text())
    assert after["RAM"] == (0x6800_0000, "128M") and after["EXTERNAL"] == (0x6000_0000, "128M")
    assert after["CODE"] == before["CODE"] and after["VECTORS"] == before["VECTORS"]


def test_board_without_external_ram_is_left_alone(tmp_path, files):
    (tmp_path / "boards").mkdir()
    script = tmp_path / "boards" / "mps2-an386.ld"
    script.write_text(files["boards/mps2-an386.ld"])
    assert not qemu.link_in_external_ram(tmp_path, BOARDS["mps2-an386"])
    assert script.read_text() == files["boards/mps2-an386.ld"]


@pytest.mark.parametrize("message,overflow", [
    (LINKER_ERROR, True),
    ("ld: build/harness.elf section `.bss' will not fit in region `RAM'", True),
    ("ld: region `RAM' overflowed by 4194336 bytes", True),
    ("ld: region `CODE' overflowed by 12 bytes", False),
    ("network.c:12: error: 'x' undeclared", False),
])
def test_only_a_ram_overflow_triggers_the_relink(message, overflow):
    assert bool(qemu.RAM_OVERFLOW.search(message)) == overflow


def test_time_limit_grows_with_the_work(monkeypatch, tmp_path):
    limits = []
    monkeypatch.setattr(qemu, "run_command", lambda command, folder, what, timeout: limits.append(timeout) or "")
    qemu.run_elf(tmp_path / "x.elf", "mps3-an547", tmp_path, 1)
    qemu.run_elf(tmp_path / "x.elf", "mps3-an547", tmp_path, 1, macc=10_000_000_000)
    assert limits[0] == 30 + qemu.RUN_TIMEOUT_PER_SAMPLE and limits[1] > 10 * limits[0]
