"""Design-space sweeps: the sweep file, cell expansion and hashes, generators, blobs, the Pareto
front, one cell against the pipeline run directly, and the HTML section. The runs on a Dask
cluster are in ``test_sweep_run.py`` (in process) and ``test_sweep_cluster.py`` (real scheduler)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import MODELS, REPO, shared_model
from mcudeploy.cli.main import main
from mcudeploy.errors import UsageError
from mcudeploy.sweep import load_sweep
from mcudeploy.sweep.blobs import BlobCache, blob_of_file
from mcudeploy.sweep.catalogue import expand_stages
from mcudeploy.sweep.cell_runner import run_cell
from mcudeploy.sweep.pareto import non_dominated, pareto_front
from mcudeploy.sweep.run import sweep_cells

RESNET = "mlperf_tiny/resnet8_int8.tflite"
KWS = "mlperf_tiny/dscnn_kws_int8.tflite"


def write_sweep(folder: Path, text: str, name: str = "sweep.toml") -> Path:
    shared_model(RESNET)
    path = folder / name
    path.write_text(f'[sweep]\nmodels_root = "{MODELS}"\n' + text if "[sweep]" not in text else text)
    return path


BASE = '''stages = ["plan", "estimate"]
[axes]
models = ["mlperf_tiny/resnet8_int8.tflite", "mlperf_tiny/dscnn_kws_int8.tflite"]
targets = ["stm32h743", "stm32n6"]
option_sets = [{name = "default"}, {name = "no-reuse", reuse = false}, {name = "small", sram_limit = "256K"}]
'''


@pytest.mark.parametrize("change, message", [
    (("targets = [\"stm32h743\", \"stm32n6\"]", "targets = []"), "[axes] targets: the axis has no values"),
    (("stages = [\"plan\", \"estimate\"]", "stages = [\"plan\", \"estimat\"]"), "unknown stage 'estimat'; did you mean 'estimate'?"),
    (("stages = [\"plan\", \"estimate\"]", "stages = []"), "[sweep] stages: the axis has no values"),
    (("targets = [\"stm32h743\", \"stm32n6\"]", "targets = [\"stm32h7433\"]"), "unknown target 'stm32h7433'; did you mean 'stm32h743'?"),
    (("reuse = false", "reuse = 3"), "option reuse: expected true or false"),
    (("reuse = false", "reus = false"), "'reus' is not a deployment option; did you mean 'reuse'?"),
    (("[axes]", "[axes]\nquantization = [\"int8\"]"), "quantization choices need the quantize stage"),
    (("[axes]", "[axes]\nobjectives = [\"latency\"]"), "search objectives need the search stage"),
    (("[axes]", "[axes]\nmodel = [\"x.tflite\"]"), "[axes] unknown key 'model'; did you mean 'models'?"),
    (("resnet8_int8.tflite", "resnet9_int8.tflite"), "[axes] models[0]: no such model file"),
    (("[axes]", "[axes]\ninput_shapes = [{input = [1, 0, 3]}]"), "expected a list of positive dimensions"),
    (("[axes]", "[sweep2]\n[axes]"), "unknown section 'sweep2'"),
    (("[axes]", "[axes.options]\nsram_limit = []\n[axes]"), "[axes.options] sram_limit: the axis has no values"),
    (("[axes]", "[quantize]\nio = \"int4\"\n[axes]"), "[quantize] io: 'int4' is not one of float, int8"),
])
def test_bad_sweep_file_is_one_usage_error(tmp_path, change, message):
    text = (f'[sweep]\nmodels_root = "{MODELS}"\n' + BASE).replace(*change)
    path = write_sweep(tmp_path, text)
    with pytest.raises(UsageError) as error:
        load_sweep(path)
    assert message in str(error.value)
    assert str(path) in str(error.value)


def test_bad_sweep_file_exits_2_on_the_command_line(tmp_path, capsys):
    path = write_sweep(tmp_path, BASE.replace('stages = ["plan", "estimate"]', 'stages = ["plan", "flash"]'))
    assert main(["sweep", str(path), "--no-record"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "unknown stage 'flash'" in lines[0]


def test_generator_parameter_range_and_errors(tmp_path):
    generator = f'[[generators]]\ncallable = "{REPO}/tools/make_unet.py:make_unet"\nname = "unet"\n'
    spec = load_sweep(write_sweep(tmp_path, 'stages = ["analyze"]\n' + generator
                                  + "parameters = {size = {start = 32, stop = 96, step = 32}, seed = 1}\n"))
    assert spec.generators[0].parameter_sets() == [{"size": 32, "seed": 1}, {"size": 64, "seed": 1},
                                                   {"size": 96, "seed": 1}]
    for bad, message in (("parameters = {size = {start = 64, stop = 32}}", "a range is"),
                         ("parameters = {size = []}", "the axis has no values")):
        with pytest.raises(UsageError, match=message):
            load_sweep(write_sweep(tmp_path, 'stages = ["analyze"]\n' + generator + bad + "\n"))
    with pytest.raises(UsageError, match="make_unet2.*offers make_unet"):
        load_sweep(write_sweep(tmp_path, 'stages = ["analyze"]\n' + generator.replace("make_unet\"", "make_unet2\"")))


def test_stages_pull_in_what_they_need():
    assert expand_stages(("estimate",)) == ("plan", "estimate")
    assert expand_stages(("qemu", "validate", "x.py:f")) == ("quantize", "validate", "plan", "qemu", "x.py:f")


def test_cells_are_the_product_of_the_axes_with_content_hashes(tmp_path):
    spec = load_sweep(write_sweep(tmp_path, BASE))
    cells = sweep_cells(spec, BlobCache(tmp_path / "cache"))
    assert len(cells) == 2 * 2 * 3
    assert [(c.model.label, c.target, c.option_set) for c in cells[:4]] == [
        ("resnet8_int8.tflite", "stm32h743", "default"), ("resnet8_int8.tflite", "stm32h743", "no-reuse"),
        ("resnet8_int8.tflite", "stm32h743", "small"), ("resnet8_int8.tflite", "stm32n6", "default")]
    assert len({c.config_hash for c in cells}) == len(cells)
    assert cells[2].options["sram_limit"] == 256 * 1024 and cells[1].options["reuse"] is False
    assert cells[0].config["model_sha256"] == blob_of_file(shared_model(RESNET)).sha256
    again = sweep_cells(load_sweep(write_sweep(tmp_path, BASE)), BlobCache(tmp_path / "cache"))
    assert [c.config_hash for c in again] == [c.config_hash for c in cells]      # stable across loads


def test_generated_models_travel_by_content(tmp_path):
    text = ('stages = ["analyze"]\n[[generators]]\n'
            f'callable = "{REPO}/tools/make_unet.py:make_unet"\nname = "unet"\n'
            'parameters = {size = [32, 64]}\n')
    cells = sweep_cells(load_sweep(write_sweep(tmp_path, text)), BlobCache(tmp_path / "cache"))
    assert [c.model.label for c in cells] == ["unet(size=32)", "unet(size=64)"]
    blobs = [c.blobs["model"] for c in cells]
    assert blobs[0].sha256 != blobs[1].sha256
    assert all(blob_of_file(b.path).sha256 == b.sha256 and b.path.is_relative_to(tmp_path / "cache") for b in blobs)


def test_blob_cache_writes_once_and_checks_the_hash(tmp_path):
    cache = BlobCache(tmp_path)
    blob = cache.put(b"model bytes", "m.onnx")
    path = cache.ensure(blob.sha256, "m.onnx", b"model bytes")
    assert path == blob.path and path.read_bytes() == b"model bytes"
    with pytest.raises(UsageError, match="do not have this SHA-256"):
        cache.ensure("0" * 64, "m.onnx", b"other bytes")


def test_pareto_front_by_hand():
    rows = [{"cell": 0, "status": "ok", "latency_ms": 1.0, "on_chip_bytes": 300, "fits": 1},
            {"cell": 1, "status": "ok", "latency_ms": 2.0, "on_chip_bytes": 100, "fits": 1},
            {"cell": 2, "status": "ok", "latency_ms": 2.0, "on_chip_bytes": 200, "fits": 1},   # dominated by 1
            {"cell": 3, "status": "ok", "latency_ms": 0.5, "on_chip_bytes": 50, "fits": 0},    # does not fit
            {"cell": 4, "status": "failed", "latency_ms": None, "on_chip_bytes": None},
            {"cell": 5, "status": "ok", "latency_ms": 3.0, "on_chip_bytes": 100, "fits": 1}]   # dominated by 1
    front = pareto_front(rows)
    assert front.front == [0, 1] and front.missing == ["accuracy"] and front.candidates == 4
    rows[5]["accuracy"], rows[1]["accuracy"], rows[0]["accuracy"] = 0.9, 0.8, 0.8
    assert pareto_front(rows).front == [0, 1, 5]         # 5 is the most accurate: on the front now
    assert non_dominated(__import__("numpy").array([[1.0, 1.0], [1.0, 1.0], [2.0, 0.5]])).tolist() == [True] * 3


def test_one_cell_equals_the_pipeline_run_directly(tmp_path):
    from mcudeploy.driver import deploy
    from mcudeploy.estimate import estimate
    from mcudeploy.options import DeploymentOptions

    spec = load_sweep(write_sweep(tmp_path, BASE))
    cell = sweep_cells(spec, BlobCache(tmp_path / "cache"))[3 + 1]        # resnet8 on stm32n6, no reuse
    result = run_cell(cell.request(), {"model": shared_model(RESNET)})
    assert result["status"] == "ok", result["error"]
    deployment = deploy(shared_model(RESNET), DeploymentOptions(target="stm32n6", reuse=False))
    assert result["figures"]["arena_bytes"] == deployment.plan.arena_bytes
    assert result["figures"]["fits"] == float(deployment.fits)
    assert result["figures"]["latency_ms"] == pytest.approx(estimate(deployment).latency_ms)
    assert result["payload"]["plan"]["arena_bytes"] == deployment.plan.arena_bytes
    assert any("dynamic batch" in text for text in result["warnings"])


def test_a_failing_stage_fails_the_cell_with_its_exit_code(tmp_path):
    spec = load_sweep(write_sweep(tmp_path, BASE.replace('"estimate"]', '"generate"]')))
    cell = sweep_cells(spec, BlobCache(tmp_path / "cache"))[0]
    request = cell.request() | {"options": cell.request()["options"] | {"sram_limit": 1024}}
    result = run_cell(request, {"model": shared_model(RESNET)})
    assert result["status"] == "failed" and result["exit_code"] == 8
    assert result["error"].startswith("generate: ") and result["figures"]["fits"] == 0.0


def test_html_report_has_the_pareto_section():
    from mcudeploy.report.html import build_sections, render_html
    from mcudeploy.runs.records import RunRecord

    cells = [{"cell": i, "model": "m", "target": "t", "option_set": "s", "status": "ok", "latency_ms": lat,
              "on_chip_bytes": ram} for i, (lat, ram) in enumerate([(1.0, 300), (2.0, 100), (3.0, 400)])]
    payload = {"sweep": {"sweep": {"name": "demo", "id": "abc", "cells": 3, "stages": ["plan"], "counts": {"ok": 3}},
                         "pareto": pareto_front(cells).to_json(), "cells": cells}}
    record = RunRecord(id=1, command="sweep", command_line="mcudeploy sweep x.toml", argv=[], started_at="2025-01-01T00:00:00+00:00",
                       payload=payload)
    section = next(s for s in build_sections(record) if s.id == "sweep")
    assert "accuracy: not measured" in " ".join(section.paragraphs)
    assert section.svg.count('stroke="#c00" stroke-width="2"') == 2          # cells 0 and 1 ringed
    assert len(section.tables[0].rows) == 2 and len(section.tables[1].rows) == 3
    assert "Sweep: Pareto front" in render_html(record)


def test_list_shows_every_cell_without_running(tmp_path, capsys):
    path = write_sweep(tmp_path, BASE)
    assert main(["sweep", str(path), "--list", "--no-record"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 + 12 and lines[1].split()[0] == "0" and "[to run]" in lines[-1]


def test_example_sweep_file_loads():
    shared_model(RESNET)
    spec = load_sweep(REPO / "examples" / "sweep.toml")
    assert spec.stages == ("plan", "estimate") and len(spec.models) * len(spec.targets) * len(spec.option_sets) == 24
    assert json.dumps(spec.metrics)


def test_quantize_validate_plan_estimate_on_random_calibration(tmp_path):
    """A float model through quantize (random calibration), validate, plan and estimate, against the
    same steps called directly; its float I/O conversions (Quantize / Dequantize) are costed too, so
    the estimate is complete (issue 22)."""
    from mcudeploy.driver import deploy, load_graph
    from mcudeploy.options import DeploymentOptions
    from mcudeploy.quantize import QuantizationConfig, quantize_model
    from mcudeploy.validate.data import random_samples

    model = REPO / "examples" / "kws_cnn.onnx"
    text = (f'[sweep]\nstages = ["validate", "estimate"]\n[axes]\nmodels = ["{model}"]\ntargets = ["stm32h743"]\n'
            '[data]\ncalibration = "random"\ncalibration_samples = 4\nsamples = 4\n')
    spec = load_sweep(write_sweep(tmp_path, text))
    assert spec.stages == ("quantize", "validate", "plan", "estimate") and spec.quantization == ("int8",)
    cell = sweep_cells(spec, BlobCache(tmp_path / "cache"))[0]
    result = run_cell(cell.request(), {"model": model})
    assert result["status"] == "ok", result["error"]
    figures = result["figures"]
    assert figures["quantized"] == 1 and 0.9 < figures["cosine"] <= 1.0
    assert figures["latency_complete"] == 1 and figures["unknown_layers"] == 0
    assert figures["latency_ms"] == pytest.approx(figures["latency_known_ms"])
    assert figures["latency_known_ms"] > 0
    assert any("random input" in text for text in result["warnings"])
    graph = load_graph(model)
    samples = random_samples(graph, 4, 0, (0.0, 1.0))
    calibration = [{name: array[i] for name, array in samples.arrays.items()} for i in range(4)]
    quantized = quantize_model(graph, calibration, QuantizationConfig(progress=False, evaluation_samples=4)).graph
    deployment = deploy(quantized, DeploymentOptions(target="stm32h743"))
    assert figures["arena_bytes"] == deployment.plan.arena_bytes
    from mcudeploy.estimate import estimate
    assert figures["latency_known_ms"] == pytest.approx(estimate(deployment).latency_ms)


def test_live_progress_counts_done_failed_running(tmp_path, monkeypatch, caplog):
    from mcudeploy.sweep.progress import SweepProgress
    from mcudeploy.sweep.results import CellResult

    cells = sweep_cells(load_sweep(write_sweep(tmp_path, BASE)), BlobCache(tmp_path / "cache"))[:3]
    monkeypatch.setenv("FORCE_COLOR", "1")              # a terminal: the live bar
    with SweepProgress("demo", total=4, resumed=1) as progress:
        assert progress.live
        progress.running(2)
        progress.finished(cells[0], CellResult(0, "ok", 0, None))
        progress.finished(cells[1], CellResult(1, "failed", 1, "plan: boom"))
        task = progress.bar.tasks[0]
        assert (task.completed, task.total, task.fields["failed"], task.fields["active"]) == (3, 4, 1, 2)
        assert task.time_remaining is None or task.time_remaining >= 0      # the ETA column's figure
    monkeypatch.delenv("FORCE_COLOR")
    monkeypatch.setenv("TERM", "dumb")
    with caplog.at_level("INFO", logger="mcudeploy.sweep"), SweepProgress("demo", total=1, enabled=False) as quiet:
        quiet.finished(cells[2], CellResult(2, "timeout", 124, "timed out after 2 s"))
    assert quiet.bar is None and "timeout: timed out after 2 s" in caplog.text
