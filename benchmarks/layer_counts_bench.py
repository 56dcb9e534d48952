"""Layers each command counts on the same quantized model: ``plan`` / ``generate`` (the
deployment's graph and its plan order), ``validate --per-layer`` (the graph it compares, and the
rows it reports) and the report's layer rows of a validate run, on MobileNetV2 0.5 (the shared
float ONNX model, quantized here by mcudeploy with two random samples: counts do not depend on
the ranges).

    python benchmarks/layer_counts_bench.py      -> results/layer_counts.md

The "before" column is the second integer form validate used until issue 27/28 (the QDQ
model converted without ``FoldPads``, ``passes.qdq_to_quantized.to_integer_graph``), computed
here side by side; "now" is ``validate.compare.integer_form`` (``driver.deployable_graph``).
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import numpy as np

import mcudeploy  # noqa: E402
from mcudeploy.driver import deploy, load_graph  # noqa: E402
from mcudeploy.exporters.onnx_qdq import to_onnx_model  # noqa: E402
from mcudeploy.passes.qdq_to_quantized import to_integer_graph  # noqa: E402
from mcudeploy.quantize.quantizer import QuantizationConfig, quantize_model  # noqa: E402
from mcudeploy.runs.payload import validation_sections  # noqa: E402
from mcudeploy.validate.compare import integer_form, quantized_feeds, validate_models  # noqa: E402
from mcudeploy.validate.data import random_samples  # noqa: E402
from mcudeploy.validate.layers import compare_layers  # noqa: E402
from mcudeploy.workflow.stages_model import _round_trip  # noqa: E402
from paths import RESULTS, SHARED_MODELS

MODEL = SHARED_MODELS / "onnx" / "mobilenetv2_0.5_128.onnx"


def quantized_file(folder: Path):
    """The quantized graph in memory and the ONNX QDQ file written from it."""
    graph = load_graph(MODEL)
    rng = np.random.default_rng(0)
    data = [{graph.inputs[0].name: rng.uniform(-1, 1, (1, 3, 128, 128)).astype(np.float32)} for _ in range(2)]
    outcome = quantize_model(graph, data, QuantizationConfig(progress=False))
    path = folder / "mobilenetv2_int8.onnx"
    path.write_bytes(to_onnx_model(outcome.graph).SerializeToString())
    return outcome.graph, path


def counts(in_memory, path: Path) -> list[tuple[str, int, int]]:
    """``(what, before, now)`` rows."""
    deployment = deploy(path)
    workflow_graph, _ = _round_trip(in_memory, path)
    float_graph = load_graph(MODEL)
    samples = random_samples(float_graph, 2, 0, (-1.0, 1.0))
    result = validate_models(float_graph, load_graph(path), samples, per_layer=True, progress=False)
    old_graph = to_integer_graph(load_graph(path))
    old_rows = len(compare_layers(float_graph, old_graph, samples.arrays, quantized_feeds(float_graph, old_graph, samples),
                                  progress=False).layers)
    assert result.layers is not None
    return [("plan / generate: deployment graph nodes = plan order", len(deployment.plan.order),
             len(deployment.plan.order)),
            ("validate: nodes of the graph it compares", len(old_graph.nodes), len(integer_form(load_graph(path)).nodes)),
            ("validate --per-layer: layers reported", old_rows, result.layers.deployed_layers),
            ("report of the validate run: layer rows", old_rows, len(validation_sections(result)[1])),
            ("deploy (workflow): nodes of the graph its search, generate and report use",
             len(deploy(in_memory).graph.nodes), len(deploy(workflow_graph).graph.nodes))]


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        rows = counts(*quantized_file(Path(folder)))
    lines = ["# Layer counts per command (one integer form)", "",
             f"Model: `{MODEL.relative_to(SHARED_MODELS)}` quantized by mcudeploy {mcudeploy.__version__} "
             "(int8, two random calibration samples).", "",
             "| what | before | now |", "|---|---:|---:|"]
    lines += [f"| {what} | {before} | {now} |" for what, before, now in rows]
    pads = sum(node.op == "Pad" for node in load_graph(MODEL).nodes)
    lines += ["", f"Before: validate converted the QDQ model without folding its {pads} zero Pads (and reported "
              "compared rows only: the Pads, not the Quantize / Dequantize and the layout Reshape). Now every "
              "deployed layer is reported, the compared ones with their errors. The deploy workflow deployed "
              f"the quantized graph in memory ({rows[-1][1]} nodes: the QDQ file round trip adds a layout Reshape), so "
              "its report differed from `generate` on the file it wrote and from a resumed deploy; now it "
              "deploys the file's graph when it loads back with the same precision.", "",
              f"Measured by `python benchmarks/layer_counts_bench.py` on {os.cpu_count()} cores, "
              f"Python {sys.version.split()[0]}; load average (1 min) at the end: {os.getloadavg()[0]:.2f}.", ""]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "layer_counts.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
