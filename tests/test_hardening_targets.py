"""Target files and ST memory pools (issue 16): deep nesting, huge integers, NaN, region
names that would inject into the generated linker script, a ``prop`` that is not an
object: each a :class:`TargetError` naming the file and the key (exit code 2)."""
from __future__ import annotations

import json

import pytest

from fuzz_cases import MINIMAL_TARGET
from mcudeploy.targets import load_memory_pools, load_target
from mcudeploy.targets.model import TargetError

MINIMAL = MINIMAL_TARGET   # two regions: SRAM, then FLASH (read-only)


@pytest.mark.parametrize("edit, words", [
    (lambda t: t + "deep = " + "[" * 20000 + "]" * 20000 + "\n", "nested too deeply"),
    (lambda t: t + "deep = " + "{a=" * 5000 + "1" + "}" * 5000 + "\n", "nested too deeply"),
    (lambda t: t.replace("clock_mhz = 100", "clock_mhz = " + "1" * 5001), "4300 digits"),
    (lambda t: t.replace("clock_mhz = 100", "clock_mhz = nan"), "'clock_mhz': expected a finite number"),
    (lambda t: t.replace("clock_mhz = 100", "clock_mhz = inf"), "finite"),
    (lambda t: t + "bandwidth_mb_per_s = nan\n", "'bandwidth_mb_per_s': expected a finite number"),
    (lambda t: t.replace('name = "SRAM"', 'name = "SRAM } /DISCARD/ : { *(*) } > X"'),
     "key 'name'.*not a valid region name"),
    (lambda t: t.replace('name = "SRAM"', 'name = "1SRAM"'), "not a valid region name"),
    (lambda t: t.replace('size = "128K"', "size = 18446744073709551617"), "out of range"),
    (lambda t: t.replace('size = "128K"', 'size = "99999999999999G"'), "size"),
])
def test_bad_target_files(tmp_path, edit, words):
    path = tmp_path / "t.toml"
    path.write_text(edit(MINIMAL))
    with pytest.raises(TargetError, match=words) as info:
        load_target(path)
    assert "t.toml" in str(info.value)


def _pool(**fields) -> dict:
    pool = {"name": "pool", "offset": "0x20000000", "size": {"value": 64, "magnitude": "KBYTES"}}
    pool.update(fields)
    return {"memory": {"mempools": [pool]}}


@pytest.mark.parametrize("document, words", [
    (_pool(prop="rw"), "'prop' must be an object"),
    (_pool(name="SRAM } /DISCARD/ : { *(*) }"), "not a valid region name"),
    (_pool(size={"value": 2**70, "magnitude": "BYTES"}), "beyond 2\\*\\*64"),
    (_pool(size=float("nan")), "not a number"),
    (_pool(size=[1]), "not a number"),
    (_pool(offset={"value": 1, "magnitude": 12}), "magnitude '12'"),
    ("[" * 100000 + "]" * 100000, "nested too deeply"),
    ('{"memory": {"mempools": [{"name": "a", "offset": 0, "size": 1' + "0" * 5000 + "}]}}",
     "memory-pool file .*: not valid JSON"),
])
def test_bad_memory_pools(tmp_path, document, words):
    path = tmp_path / "p.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    with pytest.raises(TargetError, match=words):
        load_memory_pools(path)


def test_bandwidth_from_a_nan_byte_width_is_left_unknown(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(_pool(prop={"rights": "ACC_WRITE", "byteWidth": float("nan"), "freqRatio": 1})))
    (region,) = load_memory_pools(path)
    assert region.bandwidth == 0.0 and region.name == "pool"


def test_builtin_targets_still_load():
    for name in ("stm32h743", "stm32n6", "npu-mcu"):
        assert load_target(name).regions
