"""The CMSIS-NN layer records (tools/cmsis_nn_layers.py, read by tools/cmsis_nn_harness.c):
the record header is the harness's struct, the blobs are the layer's real tensors in
CMSIS-NN's layouts, and -- with a CMSIS-NN source folder in $MCUDEPLOY_CMSIS_NN -- every
layer run by the library under QEMU equals mcudeploy's integer reference byte for byte."""
from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from mcudeploy.reference.int_executor import run_int

TOOLS = Path(__file__).resolve().parents[1] / "tools"
sys.path.insert(0, str(TOOLS))
from cmsis_nn_layers import layer_records, write_layer_file  # noqa: E402
from cmsis_nn_measure import FIELDS, KINDS  # noqa: E402
from layer_graphs import LayerBatch  # noqa: E402


def small_model():
    """Odd channels, stride 2, dilation, depth multiplier, asymmetric padding, every record kind."""
    batch = LayerBatch("cmsis", seed=3)
    batch.conv(h=9, w=7, c=5, o=7, k=3, stride=2, pad="same", relu=True)
    batch.conv(h=6, w=6, c=3, o=4, k=1, stride=1, pad="valid")
    batch.conv(h=8, w=8, c=6, o=5, k=3, stride=1, pad="same", dilation=(2, 2))
    batch.depthwise(h=9, w=8, c=13, k=3, stride=2, pad="same")
    batch.depthwise(h=6, w=7, c=4, k=(5, 3), stride=1, pad="same", multiplier=2)
    batch.fully_connected(depth=17, units=9)
    batch.binary("Add", (1, 4, 5, 7))
    batch.binary("Mul", (1, 3, 3, 5))
    batch.pool("AveragePool", 8, 6, 7, k=(3, 3), stride=(2, 2), pad="same")
    batch.pool("MaxPool", 6, 6, 9)
    batch.softmax(rows=2, depth=10)
    batch.reshape((1, 2, 2, 3), (1, 12))
    graph = batch.finish()
    rng = np.random.default_rng(1)
    feeds = {v.name: rng.integers(-128, 128, v.shape).astype(np.int8) for v in graph.inputs}
    return graph, run_int(graph, feeds, capture=True)


def header(blob: bytes) -> dict:
    return dict(zip(FIELDS, np.frombuffer(blob[:4 * len(FIELDS)], np.int32).tolist()))


def test_record_header_is_the_harness_struct():
    source = (TOOLS / "cmsis_nn_harness.c").read_text()
    body = re.search(r"typedef struct \{(.*?)\} harness_case;", source, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    names = re.findall(r"(\w+)\s*[,;]", body.replace("int32_t", ""))
    assert tuple(names) == FIELDS


def test_records_carry_the_layers_tensors():
    graph, activations = small_model()
    records = layer_records(graph, activations, helium=False)
    assert [r.blob is None for r in records] == [False] * 11 + [True]
    assert "reshape" in records[-1].reason
    nodes = {node.name: node for node in graph.nodes}
    for record in records[:-1]:
        fields, node = header(record.blob), nodes[record.node]
        expected = activations[node.outputs[0].name].astype(np.int8).tobytes()
        assert fields["output_bytes"] == len(expected) and record.blob.endswith(expected)
        assert len(record.blob) == 4 * len(FIELDS) + sum(fields[k] for k in ("input_bytes", "input2_bytes",
                                                                              "filter_bytes")) \
            + 4 * (fields["bias_count"] + 2 * fields["quant_count"]) + len(expected)
    depthwise = records[4]
    fields = header(depthwise.blob)
    weights = nodes[depthwise.node].inputs[1].const      # [O, kH, kW, 1]
    start = 4 * len(FIELDS) + fields["input_bytes"]
    filters = np.frombuffer(depthwise.blob[start:start + fields["filter_bytes"]], np.int8).reshape(1, 5, 3, 8)
    assert fields["kind"] == KINDS["depthwise"] and (fields["c"], fields["o"]) == (4, 8)
    np.testing.assert_array_equal(filters[0], weights[..., 0].transpose(1, 2, 0))
    assert header(records[0].blob)["activation_min"] > -128      # the fused ReLU's clamp
    assert header(records[5].blob)["per_channel"] == 1


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("MCUDEPLOY_CMSIS_NN"), reason="set MCUDEPLOY_CMSIS_NN to a source folder "
                    "of github.com/ARM-software/CMSIS-NN to run the layers on the library")
@pytest.mark.skipif(shutil.which("qemu-system-arm") is None, reason="qemu-system-arm not installed")
@pytest.mark.parametrize("core, board, build", [("cortex-m4", "mps2-an386", "inline-asm"),
                                                 ("cortex-m55", "mps3-an547", "default")])
def test_cmsis_nn_layers_bit_exact(tmp_path, core, board, build):
    from cmsis_nn_measure import build_harness, build_library, run_harness
    checkout = Path(os.environ["MCUDEPLOY_CMSIS_NN"])
    graph, activations = small_model()
    records = layer_records(graph, activations, helium=core == "cortex-m55")
    count = write_layer_file(records, tmp_path / "layers.bin")
    library = build_library(checkout, core, build, tmp_path / "library")
    results = run_harness(build_harness(library, checkout, board, core, tmp_path), board, tmp_path, count)
    assert all(instructions > 0 for instructions, _ in results), results
    assert [mismatches for _, mismatches in results] == [0] * count
