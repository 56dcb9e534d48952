"""The HTML report: self-contained, every model-derived string escaped, and it loads in a real
headless browser (Chromium) with no console errors and its script run."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from html import unescape as html_unescape
from pathlib import Path

import numpy as np
import pytest

from conftest import shared_model
from mcudeploy.cli.main import main
from mcudeploy.report.html import render_html, script_json
from mcudeploy.runs.records import RunRecord
from tflite_builders import Op, Tensor, build_model
from validate_pairs import tiny_pair

SCRIPT_NAME = '<script>document.title="pwned"</script>'
BREAKOUT_NAME = "</script><img src=x onerror=\"document.body.dataset.pwned='1'\"> it's \u2028"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--enable-logging=stderr", "--v=0"]


def chromium() -> str:
    """The browser; skip when absent (fail in CI, where tools/install_toolchain.sh installs it)."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium missing in CI: tools/install_toolchain.sh installs it")
        pytest.skip("chromium not installed (tools/install_toolchain.sh installs it)")
    return path


def open_in_browser(page: Path, tmp_path: Path, *mode: str) -> tuple[str, list[str]]:
    """Load ``page`` headless with ``mode`` (``--dump-dom`` or ``--screenshot=...``):
    (stdout, the console messages the page produced)."""
    result = subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                             *mode, page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    return result.stdout, console


def layout_problems(dom: str) -> tuple[int, str]:
    """What report.js measured in the browser: the page's overflow in pixels, and the SVG labels
    that are clipped by their picture or overlap another ("" when none)."""
    body = re.search(r"<body[^>]*>", dom).group(0)
    overflow = int(re.search(r'data-page-overflow="(\d+)"', body).group(1))
    assert re.search(r'data-label-problems="\d+"', body), body
    return overflow, html_unescape(re.search(r'data-label-problem-texts="([^"]*)"', body).group(1))


def evil_model(folder: Path) -> Path:
    """A float Conv + ReLU whose tensors (hence nodes) are named with markup and quotes."""
    weights = np.random.default_rng(0).normal(size=(3, 1, 1, 2)).astype(np.float32)
    tensors = [Tensor("x", (1, 4, 4, 2)), Tensor("w", (3, 1, 1, 2), data=weights),
               Tensor("b", (3,), data=np.zeros(3, np.float32)), Tensor(SCRIPT_NAME, (1, 4, 4, 3)),
               Tensor(BREAKOUT_NAME, (1, 4, 4, 3))]
    ops = [Op("CONV_2D", [0, 1, 2], [3], {"padding": 1, "stride_w": 1, "stride_h": 1}), Op("RELU", [3], [4])]
    path = folder / "evil.tflite"
    path.write_bytes(build_model(tensors, ops, [0], [4]))
    return path


def test_json_for_a_script_element_cannot_close_it():
    text = script_json({"name": "</script><!-- \u2028\u2029 & >"})
    assert "</" not in text and "<!--" not in text and "\u2028" not in text and "\u2029" not in text
    assert text == '{"name": "\\u003c/script\\u003e\\u003c!-- \\u2028\\u2029 \\u0026 \\u003e"}'


def test_every_model_string_is_escaped_in_the_page():
    evil = {"name": BREAKOUT_NAME, "op": SCRIPT_NAME, "macc": 5, "reasons": [SCRIPT_NAME], "device": "cpu",
            "sqnr_db": 20.0, "cosine": 0.9}
    record = RunRecord(id=7, command="plan", command_line=f"mcudeploy plan '{SCRIPT_NAME}'", argv=[],
                       started_at="2026-01-01T00:00:00.000+00:00", status="failed", exit_code=8,
                       finished_at="2026-01-01T00:00:01.000+00:00", model_path=SCRIPT_NAME, target=BREAKOUT_NAME,
                       warnings=[SCRIPT_NAME], errors=[BREAKOUT_NAME], config={SCRIPT_NAME: BREAKOUT_NAME},
                       figures={"arena_bytes": 64.0}, tags={SCRIPT_NAME: ""},
                       payload={"layers": [evil], "plan": {"arena_bytes": 64, "no_reuse_bound_bytes": 64, "order": ["a"],
                                "tensors": {BREAKOUT_NAME: {"offset": 0, "size": 64, "first_step": 0, "last_step": 0}},
                                "ledger": [{"item": SCRIPT_NAME, "region": "r", "bytes": 1, "note": ""}],
                                "verdict": BREAKOUT_NAME},
                                "trials": [{"trial": 1, SCRIPT_NAME: BREAKOUT_NAME}]})
    page = render_html(record)
    assert SCRIPT_NAME not in page and BREAKOUT_NAME.split("\u2028")[0] not in page
    assert len(re.findall(r"<script", page)) == 2 and "<img" not in page
    assert "&lt;script&gt;document.title=" in page          # shown, as text
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page


@pytest.mark.slow
def test_resnet8_plan_report_renders_in_chromium_without_console_errors(run_store, tmp_path):
    model = shared_model("mlperf_tiny/resnet8_int8.tflite")
    plan_json = tmp_path / "plan.json"
    assert main(["plan", str(model), "--target", "stm32h743", "--json", str(plan_json)]) == 0
    plan = json.loads(plan_json.read_text())
    page = tmp_path / "report.html"
    assert main(["report", "last", "-o", str(page)]) == 0
    html = page.read_text()
    for heading in ("Figures", "Memory", "Latency breakdown", f"Layers ({plan['nodes']})", "Configuration"):
        assert f">{heading}</h2>" in html
    # the latency plan printed is the one the report shows (it said "No latency estimate" before)
    assert "No latency estimate" not in html
    assert html.count("<rect") > len(plan["tensors"]) and f"arena {plan['arena_bytes']} B" in html
    assert plan["arena_region"] in html
    dom, console = open_in_browser(page, tmp_path, "--dump-dom")
    assert console == []
    assert re.search(r'<body[^>]*data-report-ready="1"', dom)
    assert "interactive report: run 1, " in dom and f", {plan['nodes']} layers" in dom
    shot = tmp_path / "shot.png"
    _, console = open_in_browser(page, tmp_path, f"--screenshot={shot}", "--window-size=1280,2000")
    assert console == [] and shot.stat().st_size > 30_000
    dom, _ = open_in_browser(page, tmp_path, "--dump-dom", "--window-size=1280,2000")
    assert layout_problems(dom) == (0, "")


def test_bar_labels_tell_long_names_apart_and_steps_are_numbered():
    from mcudeploy.report.html_svg import _step_ticks, bar_labels, memory_timeline
    names = [f"StatefulPartitionedCall/mobilenet_v2_128_0.5/LAYER_{i}/Conv2D" for i in (8, 19, 25)]
    assert bar_labels(names) == ["LAYER_8/Conv2D", "LAYER_19/Conv2D", "LAYER_25/Conv2D"]
    long = ["a/" + "x" * 60 + "_first", "a/" + "x" * 60 + "_second"]
    labels = bar_labels(long)
    assert len(set(labels)) == 2 and all(len(label) <= 38 and label.startswith("...") for label in labels)
    assert bar_labels(["only/one"]) == ["only/one"]
    assert _step_ticks(70) == [0, 10, 20, 30, 40, 50, 60, 70] and _step_ticks(7) == list(range(8))
    svg = memory_timeline({"t": {"offset": 0, "size": 10, "first_step": 0, "last_step": 3}}, 70, 10, 10)
    assert ">70</text>" in svg and ">step (node in execution order)</text>" in svg


@pytest.mark.slow
def test_long_layer_names_report_fits_1280_pixels_in_chromium(tmp_path):
    """A model with long TensorFlow names (MobileNetV2 from ST's zoo): nothing wider than a
    1280-pixel window (tables scroll in their own block), bar labels distinct."""
    page = tmp_path / "mnv2.html"
    assert main(["plan", str(shared_model("onnx/mobilenetv2_0.5_128.onnx")), "--target", "stm32h747",
                 "--html", str(page)]) in (0, 8)
    html = page.read_text()
    labels = re.findall(r'<text x="[0-9.]+" y="[0-9.]+" font-size="11" text-anchor="end" >([^<]*)</text>', html)
    assert len(labels) >= 10 and len(set(labels)) == len(labels)
    dom, console = open_in_browser(page, tmp_path, "--dump-dom", "--window-size=1280,2000")
    assert console == []
    assert layout_problems(dom) == (0, "")     # no page overflow, no clipped or overlapping label


@pytest.mark.slow
def test_layout_check_finds_clipped_and_overlapping_labels(tmp_path):
    """The browser-side check itself can fail: a label pushed out of its picture and two labels
    drawn on one spot are named."""
    page = tmp_path / "bad.html"
    assert main(["plan", str(shared_model("mlperf_tiny/resnet8_int8.tflite")), "--target", "stm32h743",
                 "--html", str(page)]) == 0
    bad = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 200 40" width="400">'
           '<text x="-60" y="20" font-size="11">cut off at the left</text>'
           '<text x="120" y="20" font-size="11">one</text><text x="124" y="22" font-size="11">two</text></svg>')
    page.write_text(page.read_text().replace("</h1>", "</h1>" + bad, 1))
    dom, _ = open_in_browser(page, tmp_path, "--dump-dom", "--window-size=1280,2000")
    _, problems = layout_problems(dom)
    assert problems.split(" | ") == ["clipped: cut off at the left", "overlap: one / two"]


@pytest.mark.slow
def test_equal_arena_and_bound_labels_do_not_overlap_in_chromium(tmp_path):
    """The FC autoencoder's plan has no reuse to find: its arena equals the no-reuse bound, and
    the two lines' labels were drawn on one spot."""
    page = tmp_path / "ad.html"
    assert main(["plan", str(shared_model("mlperf_tiny/fc_autoencoder_int8.tflite")), "--target", "stm32h743",
                 "--html", str(page)]) == 0
    html = page.read_text()
    assert re.search(r"arena (\d+) B</text>.*no-reuse bound \1 B</text>", html)
    # plan --html shows the latency plan printed (issue 27, point 5: it said "No latency estimate")
    assert ">Latency breakdown</h2>" in html and "No latency estimate" not in html
    dom, console = open_in_browser(page, tmp_path, "--dump-dom", "--window-size=1280,2000")
    assert console == [] and layout_problems(dom) == (0, "")


@pytest.mark.slow
def test_markup_in_node_names_renders_as_text_in_chromium(tmp_path):
    page = tmp_path / "evil.html"
    assert main(["plan", str(evil_model(tmp_path)), "--target", "stm32h743", "--html", str(page)]) == 0
    dom, console = open_in_browser(page, tmp_path, "--dump-dom")
    assert console == []
    assert re.search(r'<body[^>]*data-report-ready="1"', dom) and "data-pwned" not in dom
    assert "<title>mcudeploy plan: evil.tflite on stm32h743</title>" in dom
    assert "&lt;script&gt;document.title=\"pwned\"&lt;/script&gt;" in dom            # the name, shown as text
    assert "&lt;/script&gt;&lt;img src=x onerror=" in dom
    assert "run (not recorded)" in dom          # recording was off: the report came from memory


def test_validate_per_layer_report_has_the_error_plot(tmp_path):
    float_path, bad_path = tiny_pair(tmp_path, bad_scale=8.0)
    page = tmp_path / "validate.html"
    assert main(["validate", str(float_path), "--quantized", str(bad_path), "--per-layer", "--html", str(page)]) == 9
    html = page.read_text()
    assert ">Accuracy</h2>" in html and "<polyline" in html and "first jump: y2" in html
    assert "validation FAILED" in html and ">SQNR dB</th>" in html


@pytest.mark.slow
def test_validate_per_layer_report_in_chromium_at_1280_pixels(tmp_path):
    """README's validate --per-layer on a real model: the per-layer error plot is in the page as
    the browser builds it, nothing sticks out of a 1280-pixel window, no label is clipped."""
    float_model = shared_model("mlperf_tiny/resnet8_float.tflite")
    data = tmp_path / "val.npz"
    np.savez(data, input_1=np.random.default_rng(0).uniform(0, 255, (4, 1, 32, 32, 3)).astype(np.float32))
    page = tmp_path / "validate.html"
    assert main(["validate", str(float_model), "--quantized", str(shared_model("mlperf_tiny/resnet8_int8.tflite")),
                 "--data", str(data), "--per-layer", "--html", str(page)]) in (0, 9)
    dom, console = open_in_browser(page, tmp_path, "--dump-dom", "--window-size=1280,2000")
    assert console == [] and layout_problems(dom) == (0, "")
    plot = re.search(r'<svg[^>]*aria-label="per-layer quantization error".*?</svg>', dom, re.S)
    assert plot is not None and plot.group(0).count("<polyline") >= 2 and plot.group(0).count("<circle") > 10


def test_analyze_html_and_bad_output_folder(tmp_path, capsys):
    page = tmp_path / "analyze.html"
    assert main(["analyze", str(Path(__file__).parents[1] / "examples" / "kws_cnn.onnx"), "--html", str(page)]) == 0
    html = page.read_text()
    assert ">Compute breakdown</h2>" in html and ">MACC</th>" in html and "<style>" in html
    assert main(["analyze", "x.onnx", "--html", str(tmp_path / "missing" / "r.html")]) == 2
    assert "folder" in capsys.readouterr().err
