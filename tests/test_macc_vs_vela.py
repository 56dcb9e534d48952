"""MACC totals agree within 1 % with Arm Vela's independent count on the int8 MLPerf Tiny models."""
from __future__ import annotations

import csv
import shutil
import subprocess

import pytest

from conftest import shared_model
from mcudeploy.importers import load_model
from mcudeploy.report.analysis import analyze_graph

MODELS = ["mlperf_tiny/resnet8_int8.tflite", "mlperf_tiny/dscnn_kws_int8.tflite",
          "mlperf_tiny/mobilenetv1_vww_int8.tflite", "mlperf_tiny/fc_autoencoder_int8.tflite",
          "mlperf_tiny/streaming_wakeword_int8.tflite"]


def vela_macs(model, out_dir) -> int:
    proc = subprocess.run(["vela", str(model), "--output-dir", str(out_dir),
                           "--accelerator-config", "ethos-u55-128"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = next(out_dir.glob("*_summary_*.csv"))
    with summary.open() as handle:
        return int(float(next(csv.DictReader(handle))["nn_macs"]))


@pytest.mark.slow
@pytest.mark.parametrize("relative", MODELS)
def test_total_macc_matches_vela(relative, tmp_path):
    if shutil.which("vela") is None:
        pytest.fail("vela (ethos-u-vela) is a test dependency: pip install -e '.[test]'")
    model = shared_model(relative)
    ours = analyze_graph(load_model(model)).total_macc
    theirs = vela_macs(model, tmp_path)
    assert abs(ours - theirs) <= 0.01 * theirs, f"ours {ours:,} vs Vela {theirs:,}"
