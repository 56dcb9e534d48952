"""Calibration and overlays: a fit to measured latencies recovers a known factor, overlays
round-trip through their TOML, bad measurement files are refused with the rows named, and the
``estimate`` command's modes and exit codes."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

from conftest import shared_model
from mcudeploy.cli.main import main
from mcudeploy.driver import deploy
from mcudeploy.errors import DataError, UsageError
from mcudeploy.estimate import estimate, load_overlay
from mcudeploy.estimate.calibrate import calibrate, read_rows
from mcudeploy.estimate.overlay import Overlay, overlay_toml
from mcudeploy.options import DeploymentOptions

MODELS = ["mlperf_tiny/fc_autoencoder_int8.tflite", "tflite_micro/hello_world_int8.tflite",
          "tflite_micro/micro_speech_int8.tflite"]


@lru_cache(maxsize=None)
def deployment_of(model: Path, target: str):
    return deploy(model, DeploymentOptions(target=target))


def write_rows(path: Path, rows: list[tuple]) -> Path:
    lines = ["model,soc,cpu_mhz,framework,latency_ms"] + [",".join(map(str, row)) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_calibration_recovers_a_known_slowdown(tmp_path):
    """Rows measured 1.3x slower than the prior on every model and two boards: the fit gives
    predictions within 2 % and the overlay's runtime label carries the factor."""
    rows = []
    for model in MODELS:
        path = shared_model(model)
        for soc, target, mhz in (("STM32L4R5ZIT6U", "stm32l4r5", 120), ("STM32U575ZIT6Q", "stm32u575", 160)):
            base = estimate(deployment_of(path, target), runtime="cmsis-nn", core_clock_hz=mhz * 1e6).latency_ms
            rows.append((path, soc, mhz, "Runtime X v1.0", round(1.3 * base, 6)))
    result = calibrate(read_rows(write_rows(tmp_path / "measured.csv", rows)), deployment_of, "measured.csv")
    assert all(abs(e) < 0.02 for e in result.errors())
    overlay = result.overlay
    assert "runtime x 1.0" in overlay.runtimes and "runtime x" in overlay.runtimes
    path = shared_model(MODELS[0])
    calibrated = estimate(deployment_of(path, "stm32l4r5"), runtime="runtime x 1.0", overlay=overlay).latency_ms
    plain = estimate(deployment_of(path, "stm32l4r5"), runtime="cmsis-nn").latency_ms
    assert calibrated / plain == pytest.approx(1.3, rel=0.03)


def test_overlay_round_trip(tmp_path):
    overlay = Overlay("x", cpi={"cortex-m4": {"dsp": 1.3, "scalar": 1.5}},
                      runtimes={"x-cube-ai 10.2": ("cmsis-nn", 0.7), "x-cube-ai": ("cmsis-nn", 0.8)},
                      class_scales={"x-cube-ai": {"depthwise": 0.6, "fully_connected": 1.2}}, header="a\nb")
    path = tmp_path / "overlay.toml"
    path.write_text(overlay_toml(overlay))
    again = load_overlay(path)
    assert (again.cpi, again.runtimes, again.class_scales) == (overlay.cpi, overlay.runtimes, overlay.class_scales)
    profile = again.runtime("x-cube-ai 10.2")
    assert profile.scale == 0.7 and profile.kernel_scale("depthwise_3x3") == 0.6 and profile.kernel_scale("add") == 1.0


def test_overlay_cpi_changes_the_estimate_by_its_factor(tmp_path):
    path = shared_model("mlperf_tiny/fc_autoencoder_int8.tflite")
    deployment = deployment_of(path, "stm32l4r5")
    base = estimate(deployment, runtime="cmsis-nn", defaults=False)     # the Arm-derived priors
    overlay = tmp_path / "o.toml"
    overlay.write_text("[cores.cortex-m4]\ncpi = { dsp = 2.38 }\n")       # twice the prior 1.19
    doubled = estimate(deployment, runtime="cmsis-nn", overlay=overlay, defaults=False)
    work = sum(item.compute_cycles + item.overhead_cycles for item in base.layers)
    assert sum(item.compute_cycles + item.overhead_cycles for item in doubled.layers) == pytest.approx(2 * work)
    assert doubled.overlay == str(overlay)


@pytest.mark.parametrize("text, error, words", [
    ("[cores.cortex-m9]\ncpi = { dsp = 1 }\n", UsageError, "unknown core family"),
    ("[cores.cortex-m4]\ncpi = { dsp = -1 }\n", UsageError, "positive number"),
    ("[runtimes.x]\nprofile = \"tvm\"\n", UsageError, "needs profile"),
    ("[stuff]\n", UsageError, "unknown table"),
    ("[cores\n", UsageError, "not valid TOML"),
])
def test_bad_overlays_name_file_and_key(tmp_path, text, error, words):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(error, match=words):
        load_overlay(path)


@pytest.mark.parametrize("latency", ["nan", "-3", "0", "fast"])
def test_bad_measured_latencies_are_refused(tmp_path, latency):
    path = write_rows(tmp_path / "m.csv", [(shared_model(MODELS[1]), "STM32L4R5", 120, "X", latency)])
    with pytest.raises(DataError, match="line 2: latency_ms"):
        read_rows(path)


def test_unknown_models_and_boards_are_named_together(tmp_path):
    path = write_rows(tmp_path / "m.csv", [("missing.tflite", "STM32L4R5", 120, "X", 3.0),
                                           (shared_model(MODELS[1]), "ESP32S3", 240, "X", 3.0)])
    with pytest.raises(UsageError) as info:
        read_rows(path)
    assert "line 2: model 'missing.tflite' not found" in str(info.value)
    assert "line 3: board 'ESP32S3' is no built-in target" in str(info.value)


def test_missing_columns_are_named(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("model,latency\nx,1\n")
    with pytest.raises(UsageError, match="missing column.*latency_ms.*soc, board or target"):
        read_rows(path)


# ---------------------------------------------------------------- the command

def test_cli_estimate_prints_summary_table_and_causes(capsys, tmp_path):
    model = shared_model("tflite_micro/micro_speech_int8.tflite")
    out = tmp_path / "e.json"
    assert main(["estimate", str(model), "--target", "stm32u575", "--runtime", "cmsis-nn", "--core-clock", "80MHz",
                 "--json", str(out), "--csv", str(tmp_path / "e.csv")]) == 0
    text = capsys.readouterr().out
    assert "estimated latency:" in text and "core 80 MHz" in text and "slowest layers:" in text and "-bound" in text
    document = json.loads(out.read_text())
    assert document["core_clock_hz"] == 80e6 and document["layers"]
    assert (tmp_path / "e.csv").read_text().startswith("node,op,device")


def test_cli_exit_codes(tmp_path, capsys):
    model = shared_model("tflite_micro/hello_world_int8.tflite")
    assert main(["estimate", str(model)]) == 2                                   # no target
    assert main(["estimate", str(model), "--target", "stm32l4r5", "--runtime", "tvm"]) == 2
    assert main(["estimate", str(model), "--target", "stm32l4r5", "--core-clock", "fast"]) == 2
    bad = write_rows(tmp_path / "m.csv", [(model, "STM32L4R5", 120, "X", "nan")])
    assert main(["estimate", "--calibrate", str(bad)]) == 7
    assert "latency_ms" in capsys.readouterr().err


def test_cli_calibrate_writes_an_overlay_estimate_reads(tmp_path, capsys):
    model = shared_model("tflite_micro/hello_world_int8.tflite")
    rows = write_rows(tmp_path / "m.csv", [(model, "STM32L4R5ZIT6U", 120, "Lib 2.0", 0.05),
                                          (shared_model(MODELS[0]), "STM32L4R5ZIT6U", 120, "Lib 2.0", 7.0)])
    overlay = tmp_path / "board.toml"
    assert main(["estimate", "--calibrate", str(rows), "-o", str(overlay)]) == 0
    assert "fit error" in capsys.readouterr().out
    assert main(["estimate", str(model), "--target", "stm32l4r5", "--overlay", str(overlay), "--runtime", "lib 2.0"]) == 0
    assert "runtime lib 2.0" in capsys.readouterr().out


def test_plan_prints_the_estimated_latency(capsys):
    model = shared_model("tflite_micro/hello_world_int8.tflite")
    assert main(["plan", str(model), "--target", "stm32h743"]) == 0
    assert "estimated latency" in capsys.readouterr().out
