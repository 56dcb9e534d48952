"""The Vela back end: vela.ini from the target, Vela's own knobs, its summary turned into trials
with the same reasons, and Vela missing or crashing as one clear line / a FAIL with its message."""
from __future__ import annotations

import os
import shutil
import stat

import pytest

from conftest import shared_model
from mcudeploy.cli.main import main
from mcudeploy.errors import UsageError
from mcudeploy.search import SearchRequest, run_search
from mcudeploy.search.vela import accelerator_of, vela_ini
from mcudeploy.targets import load_target

RESNET8 = "mlperf_tiny/resnet8_int8.tflite"
needs_vela = pytest.mark.skipif(shutil.which("vela") is None, reason="ethos-u-vela is not installed")


@pytest.mark.parametrize("target,accelerator", [("alif-e7-he", "ethos-u55-128"), ("alif-e7-hp", "ethos-u55-256")])
def test_the_accelerator_and_the_system_come_from_the_target(target, accelerator):
    loaded = load_target(target)
    assert accelerator_of(loaded) == accelerator
    ini = vela_ini(loaded, "board")
    assert "[System_Config.board]" in ini and f"core_clock={loaded.npu.clock_hz:.6g}" in ini
    scales = [float(line.split("=")[1]) for line in ini.splitlines() if "_clock_scale=" in line]
    assert scales and all(0 < scale <= 1 for scale in scales)
    assert "[Memory_Mode.Shared_Sram]" in ini and "arena_mem_area=Axi0" in ini


@pytest.mark.parametrize("name, clock_mhz, macs, regions", [
    ("alif-e7-he", 160, 128, {"DTCM": 256, "SRAM0": 4096, "SRAM1": 2560, "MRAM": 5632}),
    ("alif-e7-hp", 400, 256, {"DTCM": 1024, "SRAM0": 4096, "SRAM1": 2560, "MRAM": 5632}),
])
def test_ethos_u_targets_match_their_sources(name, clock_mhz, macs, regions):
    target = load_target(name)
    assert target.name == name and target.references
    assert target.core.clock_hz == clock_mhz * 1e6 and target.npu.clock_hz == clock_mhz * 1e6
    assert target.npu.ops_per_cycle == 2 * macs and target.npu.macs_per_accelerator == macs
    for region, kib in regions.items():
        assert target.region(region).size == kib * 1024
    ordered = sorted(target.regions, key=lambda r: r.base)
    assert all(a.end <= b.base for a, b in zip(ordered, ordered[1:]))
    assert any(region.kind == "flash" and not region.writable for region in target.regions)


def test_a_target_without_an_ethos_u_is_refused():
    with pytest.raises(UsageError, match="needs an Arm Ethos-U target"):
        accelerator_of(load_target("stm32n6"))


@pytest.mark.slow
@needs_vela
def test_vela_trials_report_vela_figures_and_ours(tmp_path):
    log = tmp_path / "vela.log"
    result = run_search(shared_model(RESNET8), SearchRequest(target="alif-e7-he", backend="vela", budget=4,
                                                             objective="memory", log_path=log))
    default, best = result.default, result.best
    assert default.passed and best is not None
    assert default.metrics.extra["vela_cycles"] > 0 and default.metrics.extra["npu_operators"] > 0
    assert best.metrics.on_chip_bytes <= default.metrics.on_chip_bytes
    assert result.baseline["mcudeploy_latency_ms"] > 0
    assert "--memory-mode" in result.best_toml() and "Trial 0 [defaults]" in log.read_text()


@pytest.mark.slow
@needs_vela
def test_vela_sram_over_the_limit_is_ram_nofit():
    result = run_search(shared_model(RESNET8), SearchRequest(target="alif-e7-he", backend="vela", budget=2,
                                                             options=SearchRequest().options.with_values(
                                                                 sram_limit=8192)))
    assert result.best is None
    reason = result.default.reasons[0]
    assert reason.code == "RAM_NOFIT" and reason.data["available"] == 8192 and reason.data["needed"] > 8192


def test_vela_missing_is_one_line_with_exit_code_2(monkeypatch, capsys):
    monkeypatch.setenv("MCUDEPLOY_VELA", "/nonexistent/vela")
    code = main(["search", str(shared_model(RESNET8)), "--target", "alif-e7-he", "--backend", "vela"])
    error = capsys.readouterr().err
    assert code == 2 and "Vela compiler (/nonexistent/vela) was not found" in error and error.count("\n") == 1


def test_vela_crashing_is_a_fail_with_its_message_and_the_log_is_kept(tmp_path, monkeypatch, capsys):
    script = tmp_path / "vela"
    script.write_text("#!/bin/sh\necho 'Traceback (most recent call last):' >&2\n"
                      "echo 'RuntimeError: Compilation failed: boom' >&2\nexit 1\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("MCUDEPLOY_VELA", str(script))
    log = tmp_path / "crash.log"
    code = main(["search", str(shared_model(RESNET8)), "--target", "alif-e7-he", "--backend", "vela",
                 "--budget", "3", "--log", str(log)])
    assert code == 8
    lines = [line for line in log.read_text().splitlines() if line.startswith("Trial ")]
    assert len(lines) == 3 and all("UNSUPPORTED: Vela: failed (exit 1): RuntimeError: Compilation failed: boom" in line
                                   for line in lines)
    assert os.path.exists(str(log) + ".jsonl")


def test_vela_needs_a_tflite_model(tmp_path, capsys):
    model = shared_model("onnx/mobilenetv2_0.5_128.onnx")
    assert main(["search", str(model), "--target", "alif-e7-he", "--backend", "vela"]) == 2
    assert "compiles TFLite models" in capsys.readouterr().err
