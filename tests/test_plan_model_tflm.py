"""TFLite Micro interop: our offsets written as TFLM's ``OfflineMemoryAllocation`` metadata.

The tflite-micro interpreter (an independent implementation) loads the exported model,
reports its arena head through ``print_allocations()`` (printed from C; captured at the
file-descriptor level), and must (1) report exactly our arena, smaller than its own plan
of the original model, and (2) produce the same outputs as on the original model.
TFLM runs the overlapping offsets with its own reference kernels, so this is also a second,
independent execution check of the in-place / overlap reuse.
"""
from __future__ import annotations

import logging

import numpy as np
import pytest

from conftest import require, shared_model
from mcudeploy.importers import load_model
from mcudeploy.plan.memory_plan import plan_memory

runtime = require("tflite_micro.python.tflite_micro.runtime")
schema = require("ai_edge_litert.schema_py_generated")
from mcudeploy.exporters.tflm_offline import METADATA_NAME, export_tflm_offline, tflm_arena_head  # noqa: E402

MODELS = ["mlperf_tiny/resnet8_int8.tflite", "mlperf_tiny/dscnn_kws_int8.tflite",
          "mlperf_tiny/mobilenetv1_vww_int8.tflite", "tflite_micro/micro_speech_int8.tflite"]


@pytest.mark.parametrize("model", MODELS)
def test_exported_offline_plan_shrinks_tflm_arena_and_keeps_outputs(model, tmp_path, caplog):
    caplog.set_level(logging.ERROR)
    source = shared_model(model)
    graph = load_model(source)
    plan = plan_memory(graph, schedule="file", time_limit=1.0)
    result = export_tflm_offline(source, plan, tmp_path / "offline.tflite")
    assert result.online == []
    original = runtime.Interpreter.from_file(str(source))
    exported = runtime.Interpreter.from_file(str(result.path))
    original_head, exported_head = tflm_arena_head(original), tflm_arena_head(exported)
    assert exported_head == plan.arena_bytes < original_head
    rng = np.random.default_rng(0)
    for _ in range(2):
        details = original.get_input_details(0)
        x = rng.integers(-128, 128, details["shape"]).astype(details["dtype"])
        for interpreter in (original, exported):
            interpreter.set_input(x, 0)
            interpreter.invoke()
        for index in range(len(graph.outputs)):
            assert np.array_equal(original.get_output(index), exported.get_output(index))


def test_metadata_layout(tmp_path, caplog):
    caplog.set_level(logging.ERROR)
    source = shared_model("tflite_micro/hello_world_int8.tflite")
    plan = plan_memory(load_model(source), schedule="file", time_limit=1.0)
    path = export_tflm_offline(source, plan, tmp_path / "a.tflite").path
    # exporting twice replaces the entry instead of adding a second one
    path = export_tflm_offline(path, plan, tmp_path / "b.tflite").path
    model = schema.ModelT.InitFromPackedBuf(bytearray(path.read_bytes()), 0)
    entries = [m for m in model.metadata if m.name.decode() == METADATA_NAME]
    assert len(entries) == 1
    words = np.frombuffer(bytes(model.buffers[entries[0].buffer].data), dtype="<i4")
    tensors = model.subgraphs[0].tensors
    assert list(words[:3]) == [0, 0, len(tensors)]
    for tensor, offset in zip(tensors, words[3:]):
        name = tensor.name.decode()
        assert offset == (plan.tensors[name].offset if name in plan.tensors else -1)
