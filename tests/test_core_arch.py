"""``Core.arch``: every built-in core declares its architecture, extensions agree with it, and
what depends on the instruction set (the QEMU board, the size report's build) reads it, not
the core's name."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcudeploy.targets import TargetError, builtin_names, load_target
from mcudeploy.targets.model import ARCHITECTURES, CORE_ARCHITECTURES, Core, Target, core_key
from mcudeploy.validate.qemu import qemu_engine
from mcudeploy.validate.size_report import SIZE_BOARD, size_core

SOURCE = Path(__file__).resolve().parents[1] / "src" / "mcudeploy"
BUILTIN = SOURCE / "targets" / "builtin"
CORE = """
name = "board"
[core]
name = "{name}"
clock_mhz = 100
{extra}
[[regions]]
name = "SRAM"
base = 0x2000_0000
size = "64K"
"""


def board(tmp_path: Path, name: str, extra: str = "") -> Path:
    path = tmp_path / "board.toml"
    path.write_text(CORE.format(name=name, extra=extra))
    return path


@pytest.mark.parametrize("name", builtin_names())
def test_every_builtin_declares_its_architecture(name):
    text = (BUILTIN / f"{name}.toml").read_text()
    core_table = text.split("[core]", 1)[1].split("\n[", 1)[0]
    declared = re.search(r'^arch = "([^"]+)"', core_table, re.M)
    assert declared is not None, f"builtin/{name}.toml: [core] has no arch"
    core = load_target(name).core
    assert core.arch == declared.group(1) in ARCHITECTURES
    assert core.arch == CORE_ARCHITECTURES[core_key(core.name)]   # the file agrees with Arm's table
    if core.mve != "none":
        assert core.arch == "armv8.1m.main"


@pytest.mark.parametrize("name, arch", [("Cortex-M4F", "armv7em"), ("Cortex-M55-class", "armv8.1m.main"),
                                        ("Cortex-M0+", "armv6m"), ("cortex-m85", "armv8.1m.main"),
                                        ("RISC-V", "")])
def test_arch_defaults_to_the_known_architecture_of_the_named_core(tmp_path, name, arch):
    assert load_target(board(tmp_path, name)).core.arch == arch


def test_declared_arch_wins_over_the_name(tmp_path):
    core = load_target(board(tmp_path, "my-core", 'arch = "armv8m.main"\ndsp = true')).core
    assert core.arch == "armv8m.main" and core.armv8m


@pytest.mark.parametrize("extra, message", [
    ('arch = "armv9a"', "'arch'.*not one of"),
    ('arch = "armv6m"\ndsp = true', "no DSP extension"),
    ('dsp = true', "armv7m.*no DSP extension"),                       # Cortex-M3 by name
    ('arch = "armv8m.main"\nmve = "integer"', "Vector Extension needs armv8.1m.main"),
])
def test_extensions_the_architecture_lacks_are_errors(tmp_path, extra, message):
    with pytest.raises(TargetError, match=message):
        load_target(board(tmp_path, "Cortex-M3", extra))


def _target(name: str, arch: str) -> Target:
    return Target("t", Core(name, 1e8, arch=arch), regions=())


@pytest.mark.parametrize("arch, engine", [("armv6m", "qemu-m4"), ("armv7em", "qemu-m4"), ("armv8m.base", "qemu-m55"),
                                          ("armv8m.main", "qemu-m55"), ("armv8.1m.main", "qemu-m55"), ("", "qemu-m4")])
def test_qemu_board_follows_the_architecture_not_the_name(arch, engine):
    assert qemu_engine(_target("Cortex-M4", arch)) == engine      # the name says M4: the arch decides
    assert qemu_engine(None) == "qemu-m4"


@pytest.mark.parametrize("name, arch, build", [("Cortex-M7", "armv7em", "cortex-m7"), ("Cortex-M4F", "armv7em", "cortex-m4"),
                                               ("Cortex-M85", "armv8.1m.main", "cortex-m55"),
                                               ("Cortex-M23", "armv8m.base", "cortex-m33"),
                                               ("Cortex-M55-class", "armv8.1m.main", "cortex-m55"),
                                               ("my-core", "armv8m.main", "cortex-m33"), ("RISC-V", "", "cortex-m4")])
def test_size_report_build(name, arch, build):
    assert size_core(Core(name, 1e8, arch=arch)) == build in SIZE_BOARD


def test_no_core_name_patterns_in_the_source():
    """Code decides by ``Core.arch`` and the extension fields: no regex or substring test of a
    Cortex-M number (``re.search(r"M(\\d+)", core.name)``, ``"m55" in name``)."""
    pattern = re.compile(r"""re\.\w+\(.*core\.name|\bin [\w.]*core\.name\b|core\.name\.(lower|startswith|endswith)"""
                         r"""|["']m\d+["']\s+in\b|M\(\\d""")
    found = [f"{path.relative_to(SOURCE)}:{number}" for path in SOURCE.rglob("*.py")
             for number, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []
    assert not any("ARMV8M_CORES" in path.read_text() for path in SOURCE.rglob("*.py"))
