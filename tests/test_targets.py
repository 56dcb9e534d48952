"""Targets: every built-in loads and is consistent; bad target files fail with messages that
name the file and the key; ST memory-pool files become regions."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcudeploy.cli.main import main
from mcudeploy.ir import all_ops
from mcudeploy.targets import TargetError, builtin_names, load_memory_pools, load_target

EXPECTED_BUILTINS = {"stm32f103", "stm32f407", "stm32f767", "stm32h743", "stm32h747", "stm32l4r5",
                     "stm32u585", "stm32n6", "npu-mcu",
                     "stm32f746", "stm32g0b1", "stm32u385", "stm32u575",   # boards of the MLPerf Tiny rows
                     "alif-e7-he", "alif-e7-hp",   # Cortex-M55 + Ethos-U55 (the Vela back end)
                     "mps2-an386", "mps3-an547"}   # the QEMU boards generated code runs on
QEMU_BOARD_TARGETS = {"mps2-an386", "mps3-an547"}   # FPGA images: 25 / 32 MHz

MINIMAL = """
name = "tiny"
[core]
name = "Cortex-M4F"
clock_mhz = 80
fpu = "single"
[[regions]]
name = "SRAM"
base = 0x2000_0000
size = "64K"
[[regions]]
name = "FLASH"
base = 0x0800_0000
size = 262144
kind = "flash"
access = "r"
"""


def write(tmp_path: Path, text: str, name: str = "board.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_builtin_list_is_complete():
    assert set(builtin_names()) == EXPECTED_BUILTINS


@pytest.mark.parametrize("name", sorted(EXPECTED_BUILTINS))
def test_builtin_loads_and_is_consistent(name):
    target = load_target(name)
    assert target.name == name
    assert target.references, "every built-in cites its documents"
    # the slowest chip: STM32G0B1 (Cortex-M0+, 64 MHz); the QEMU boards' FPGA clocks are slower
    assert target.core.clock_hz >= (25e6 if name in QEMU_BOARD_TARGETS else 64e6)
    assert target.largest_sram is not None and target.largest_sram.size > 0
    assert any(region.kind == "flash" and not region.writable for region in target.regions)
    ordered = sorted(target.regions, key=lambda r: r.base)
    assert all(a.end <= b.base for a, b in zip(ordered, ordered[1:]))
    if target.npu is not None:
        assert target.npu.ops <= set(all_ops())


@pytest.mark.parametrize("name, sram_kib, clock_mhz, regions", [
    ("stm32f103", 20, 72, {"SRAM": 20}),
    ("stm32f407", 192, 168, {"SRAM1": 112, "SRAM2": 16, "CCMRAM": 64}),
    ("stm32h743", 1056, 480, {"DTCM": 128, "AXI_SRAM": 512, "SRAM1": 128, "SRAM2": 128,
                              "SRAM3": 32, "SRAM4": 64}),
    ("stm32u585", 784, 160, {"SRAM1": 192, "SRAM2": 64, "SRAM3": 512, "SRAM4": 16}),
    ("stm32n6", 4224, 800, {"cpuRAM2": 1024, "npuRAM3": 448, "npuRAM6": 448}),
])
def test_builtin_figures_match_the_datasheets(name, sram_kib, clock_mhz, regions):
    target = load_target(name)
    assert target.total_sram == sram_kib * 1024
    assert target.core.clock_hz == clock_mhz * 1e6
    for region, kib in regions.items():
        assert target.region(region).size == kib * 1024


def test_stm32n6_npu_and_external_memories():
    target = load_target("STM32N6")  # names are case-insensitive
    assert target.core.mve == "float"
    assert target.npu.clock_hz == 1e9 and target.npu.tops == pytest.approx(0.6)
    assert target.region("npuRAM3").base == 0x3420_0000
    assert target.region("npuRAM4").base == 0x3427_0000
    assert target.region("hyperRAM").kind == "psram"
    assert target.region("octoFlash").kind == "flash"
    assert target.region("npuRAM3").bandwidth == pytest.approx(6.4e9)


def test_npu_mcu_generic_figures():
    target = load_target("npu-mcu")
    assert target.npu.tops == pytest.approx(0.8)
    assert target.region("SRAM").size == 1024 ** 2
    psram = target.region("PSRAM")
    assert (psram.size, psram.bandwidth) == (8 * 1024 ** 2, 400e6)


def test_user_file_loads(tmp_path):
    target = load_target(write(tmp_path, MINIMAL))
    assert target.name == "tiny" and target.npu is None
    assert target.region("SRAM").size == 65536
    assert target.region("FLASH").size == 262144
    assert target.core.fpu == "single"


@pytest.mark.parametrize("edit, key, words", [
    (lambda t: t.replace('size = "64K"', 'size = "64K"\nbase = 0x2000_8000', 1), "TOML",
     ["not valid TOML"]),
    (lambda t: t.replace('base = 0x0800_0000', 'base = 0x2000_8000'), "FLASH",
     ["overlap", "SRAM", "32768 bytes"]),
    (lambda t: t.replace('name = "tiny"\n', ''), "name", ["missing key 'name'", "top level"]),
    (lambda t: t.replace('clock_mhz = 80\n', ''), "clock_mhz", ["[core]", "missing key"]),
    (lambda t: t.replace('fpu = "single"', 'fpu = "single"\nturbo = true'), "turbo",
     ["unknown key", "[core]"]),
    (lambda t: t.replace('size = 262144', 'size = -4'), "size", ["'FLASH'", "at least 1", "-4"]),
    (lambda t: t.replace('size = "64K"', 'size = 0'), "size", ["'SRAM'", "at least 1"]),
    (lambda t: t.replace('size = "64K"', 'size = "64 parsecs"'), "size", ["'SRAM'", "bytes"]),
    (lambda t: t.replace('kind = "flash"', 'kind = "eeprom"'), "kind", ["'eeprom'", "'psram'"]),
    (lambda t: t + '[npu]\nname="x"\nclock_mhz=100\ntops=1\nops=["Conv","NotAnOp"]\n', "ops",
     ["[npu]", "'NotAnOp'", "not IR op"]),
    (lambda t: t + '[npu]\nname="x"\nclock_mhz=100\nops=["Conv"]\n', "tops",
     ["exactly one of 'ops_per_cycle' or 'tops'"]),
    (lambda t: t + '[npu]\nname="x"\nclock_mhz=100\ntops=1\nops=["Conv"]\ndtypes=["int4"]\n',
     "dtypes", ["'int4'"]),
])
def test_bad_files_name_file_and_key(tmp_path, edit, key, words):
    path = write(tmp_path, edit(MINIMAL))
    with pytest.raises(TargetError) as info:
        load_target(path)
    message = str(info.value)
    assert str(path) in message
    assert key in message
    assert all(w in message for w in words)


def test_unknown_target_name_lists_builtins():
    with pytest.raises(TargetError, match="stm32h743"):
        load_target("stm32x999")


@pytest.mark.parametrize("typed,meant", [("stm32h734", "stm32h743"), ("stm32n5", "stm32n6"),
                                         ("STM32U858", "stm32u585"), ("stm32h7433", "stm32h743")])
def test_misspelled_target_gets_did_you_mean(typed, meant):
    with pytest.raises(TargetError, match=f"did you mean '{meant}'"):
        load_target(typed)


def test_far_off_target_name_gets_no_guess():
    with pytest.raises(TargetError) as err:
        load_target("raspberry")
    assert "did you mean" not in str(err.value)


def test_missing_target_file(tmp_path):
    with pytest.raises(TargetError, match="no such target file"):
        load_target(tmp_path / "absent.toml")


MPOOL = {
    "params": {"param": [{"paramname": "max_onchip_sram_size", "value": "1024",
                          "magnitude": "KBYTES"}]},
    "memory": {
        "cacheinfo": [{"nlines": 512, "linesize": 64}],
        "mem_file_prefix": "atonbuf",
        "mempools": [
            {"fname": "AXIFLEXMEM", "name": "flexMEM", "fformat": "FORMAT_RAW",
             "prop": {"rights": "ACC_WRITE", "throughput": "MID", "latency": "MID"},
             "offset": {"value": "0x34000000", "magnitude": "BYTES"},
             "size": {"value": "0", "magnitude": "KBYTES"}},
            {"fname": "AXISRAM2", "name": "cpuRAM2", "fformat": "FORMAT_RAW",
             "prop": {"rights": "ACC_WRITE", "throughput": "MID", "latency": "MID",
                      "byteWidth": 8, "freqRatio": 2.5},
             "offset": {"value": "0x34100000", "magnitude": "BYTES"},
             "size": {"value": "1024", "magnitude": "KBYTES"}},
            {"fname": "AXISRAM3", "name": "npuRAM3",
             "prop": {"rights": "ACC_WRITE", "throughput": "HIGH", "latency": "LOW",
                      "byteWidth": 8, "freqRatio": 1.25},
             "offset": {"value": "0x34200000", "magnitude": "BYTES"},
             "size": {"value": "448", "magnitude": "KBYTES"}},
            {"fname": "xSPI1", "name": "hyperRAM",
             "prop": {"rights": "ACC_WRITE", "throughput": "MID", "latency": "HIGH",
                      "byteWidth": 2, "freqRatio": 5.0, "cacheable": "CACHEABLE_ON"},
             "offset": {"value": "0x90000000", "magnitude": "BYTES"},
             "size": {"value": "16", "magnitude": "MBYTES"}},
            {"fname": "xSPI2", "name": "octoFlash",
             "prop": {"rights": "ACC_READ", "throughput": "MID", "latency": "HIGH",
                      "byteWidth": 1, "freqRatio": 6.0},
             "offset": {"value": "0x70380000", "magnitude": "BYTES"},
             "size": {"value": "61", "magnitude": "MBYTES"}},
        ],
    },
}


def test_mpool_becomes_regions(tmp_path):
    path = tmp_path / "board.mpool"
    path.write_text(json.dumps(MPOOL))
    regions = {r.name: r for r in load_memory_pools(path)}
    assert set(regions) == {"cpuRAM2", "npuRAM3", "hyperRAM", "octoFlash"}  # size 0 skipped
    assert (regions["npuRAM3"].base, regions["npuRAM3"].size) == (0x34200000, 448 * 1024)
    assert regions["npuRAM3"].bandwidth == pytest.approx(8 / 1.25 * 1e9)
    assert regions["npuRAM3"].latency_cycles < regions["hyperRAM"].latency_cycles
    assert (regions["hyperRAM"].kind, regions["hyperRAM"].size) == ("psram", 16 * 1024 ** 2)
    assert (regions["octoFlash"].kind, regions["octoFlash"].access) == ("flash", "r")
    assert regions["cpuRAM2"].kind == "sram"


def test_target_file_takes_regions_from_mpool(tmp_path):
    (tmp_path / "board.mpool").write_text(json.dumps(MPOOL))
    text = 'regions_from = "board.mpool"\n' + MINIMAL.split("[[regions]]")[0]
    target = load_target(write(tmp_path, text))
    assert target.region("npuRAM3").size == 448 * 1024


def test_classic_memory_pool_list(tmp_path):
    path = tmp_path / "pools.json"
    path.write_text(json.dumps({"memory_pools": [
        {"name": "SRAM1", "address": "0x20000000", "size": 196608},
        {"name": "SRAM3", "offset": 0x20040000, "size": {"value": 512, "magnitude": "KBYTES"}}]}))
    regions = load_memory_pools(path)
    assert [(r.name, r.base, r.size) for r in regions] == [
        ("SRAM1", 0x20000000, 196608), ("SRAM3", 0x20040000, 512 * 1024)]


@pytest.mark.parametrize("document, words", [
    ({"memory": {"mempools": [{"name": "a", "offset": 0, "size": 100},
                              {"name": "b", "offset": 50, "size": 100}]}},
     ["overlap", "'a'", "'b'"]),
    ({"memory": {"mempools": [{"name": "a", "size": 100}]}}, ["'offset'", "'a'"]),
    ({"memory": {"mempools": [{"name": "a", "offset": "0x10", "size": "ten"}]}}, ["size", "'ten'"]),
    ({"memory": {"mempools": [{"name": "a", "offset": "0x10", "size": -5}]}}, ["negative"]),
    ({"pools": []}, ["no memory pool list"]),
])
def test_bad_memory_pool_files(tmp_path, document, words):
    path = tmp_path / "bad.mpool"
    path.write_text(json.dumps(document))
    with pytest.raises(TargetError) as info:
        load_memory_pools(path)
    assert str(path) in str(info.value)
    assert all(w in str(info.value) for w in words)


def test_mpool_not_json(tmp_path):
    path = tmp_path / "bad.mpool"
    path.write_text("{ not json")
    with pytest.raises(TargetError, match="memory-pool file .*: not valid JSON"):
        load_memory_pools(path)


def test_qemu_board_targets_match_the_boards_the_code_runs_on():
    """The built-in targets of the QEMU boards have the boards' cores and memory map
    (mcudeploy.codegen.boards): a deployment for them links where the emulator has RAM."""
    from mcudeploy.codegen.boards import BOARDS
    for name in QEMU_BOARD_TARGETS:
        target, board = load_target(name), BOARDS[name]
        assert target.core.name.lower().startswith(board.core)
        data = target.largest_sram
        assert data.base == board.ram_base and data.size == 4 * 1024 * 1024


def test_cli_targets_list_and_show(capsys, tmp_path):
    assert main(["targets", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {t["name"] for t in listed} == EXPECTED_BUILTINS
    assert main(["targets", "stm32h743", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in shown["regions"]][:3] == ["ITCM", "DTCM", "AXI_SRAM"]
    assert main(["targets", "stm32n6"]) == 0
    assert "npuRAM5" in capsys.readouterr().out
    bad = write(tmp_path, MINIMAL.replace("clock_mhz = 80", "clock_mhz = -80"))
    assert main(["targets", str(bad)]) == 2
    assert "clock_mhz" in capsys.readouterr().err
