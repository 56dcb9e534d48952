"""One integer form: ``validate``, ``generate`` / ``plan`` and the report count the same layers.

The quantized model is compared in the form it is deployed (:func:`mcudeploy.validate.compare.
integer_form` = :func:`mcudeploy.driver.deployable_graph`): MobileNetV2 0.5 quantized by
mcudeploy has four zero Pads that deployment folds into their Convs; a second integer form
without ``FoldPads`` made ``validate`` report 71 layers beside ``generate``'s 70.
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from conftest import shared_model
from mcudeploy.driver import deploy, load_graph
from mcudeploy.errors import UsageError
from mcudeploy.exporters.onnx_qdq import to_onnx_model
from mcudeploy.ir import verify
from mcudeploy.quantize.quantizer import QuantizationConfig, quantize_model
from mcudeploy.report.validation_render import print_report
from mcudeploy.runs.payload import graph_layer_rows, validation_sections
from mcudeploy.validate.compare import integer_form, validate_models
from mcudeploy.validate.data import random_samples
from mcudeploy.workflow.stages_model import _round_trip

MOBILENET = "onnx/mobilenetv2_0.5_128.onnx"


def _quantized_file(folder: str):
    float_graph = load_graph(shared_model(MOBILENET))
    rng = np.random.default_rng(0)
    name = float_graph.inputs[0].name
    data = [{name: rng.uniform(-1, 1, (1, 3, 128, 128)).astype(np.float32)} for _ in range(2)]
    outcome = quantize_model(float_graph.copy(), data, QuantizationConfig(progress=False))
    path = f"{folder}/mobilenetv2_int8.onnx"
    with open(path, "wb") as handle:
        handle.write(to_onnx_model(outcome.graph).SerializeToString())
    return float_graph, path, outcome.graph


@pytest.fixture(scope="module")
def mobilenet(tmp_path_factory):
    return _quantized_file(str(tmp_path_factory.mktemp("forms")))


@pytest.mark.slow
def test_validate_generate_and_report_count_the_same_layers(mobilenet):
    float_graph, path, _ = mobilenet
    deployment = deploy(path)
    deployed = [node.name for node in deployment.graph.nodes]
    compared_graph = integer_form(load_graph(path))
    verify(compared_graph)
    assert "Pad" in {node.op for node in load_graph(path).nodes}          # the case that differed
    assert [node.name for node in compared_graph.nodes] == deployed
    assert len(deployment.plan.order) == len(deployed)                    # generate's "N layers"
    result = validate_models(float_graph.copy(), load_graph(path), random_samples(float_graph, 2, 0, (-1.0, 1.0)),
                             per_layer=True, progress=False)
    assert result.layers is not None and result.layers.deployed_layers == len(deployed)
    # per layer, float layers are still paired with the integer ones by name, not by position
    compared = result.layers.layers
    assert {layer.node for layer in compared} <= set(deployed)
    assert sum(layer.matched_by in ("name", "node name") for layer in compared) >= len(deployed) - 5
    assert all(layer.cosine > 0.9 for layer in compared)
    # the report's layer rows (validation run, deployment run) are the deployed nodes, in order
    _, rows = validation_sections(result)
    assert [row["name"] for row in rows] == deployed
    assert [row["name"] for row in graph_layer_rows(deployment.graph)] == deployed
    printed = io.StringIO()
    print_report(result, Console(file=printed, width=400))
    assert f"{len(compared)} of the {len(deployed)} deployed layers compared" in printed.getvalue()


def test_integer_form_leaves_its_argument_and_refuses_a_float_model(mobilenet):
    float_graph, path, _ = mobilenet
    loaded = load_graph(path)
    before = [node.name for node in loaded.nodes]
    integer_form(loaded)
    assert [node.name for node in loaded.nodes] == before
    with pytest.raises(UsageError, match="not quantized"):
        integer_form(float_graph)


@pytest.mark.slow
def test_the_deploy_workflow_deploys_the_file_it_wrote(mobilenet):
    """The quantize stage hands the later stages the file's graph (what ``generate`` on the file
    and a resumed ``deploy --from search`` read), not the graph in memory, whose round trip
    through the ONNX QDQ file differs by a layout Reshape."""
    _, path, in_memory = mobilenet
    graph, precisions = _round_trip(in_memory, Path(path))
    assert precisions == {"graph_precision": "integer", "file_precision": "integer"}
    deployed = [node.name for node in deploy(graph).graph.nodes]
    assert deployed == [node.name for node in deploy(path).graph.nodes]
    assert len(deployed) != len(deploy(in_memory).graph.nodes)      # the case that differed
