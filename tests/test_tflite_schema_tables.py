"""The importer's own flatbuffer reading (schema_tables + TableView) against the ``tflite``
package's generated accessors: the tables are what the installed package gives, and every
operator's options and every tensor of the shared models read the same both ways."""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
import tflite

from conftest import REPO, shared_model
from mcudeploy.importers.tflite.reader import read_model

MODELS = ["mlperf_tiny/resnet8_int8.tflite", "mlperf_tiny/dscnn_kws_int8.tflite",
          "mlperf_tiny/mobilenetv1_vww_int8.tflite", "mlperf_tiny/fc_autoencoder_int8.tflite",
          "tflite_micro/micro_speech_int8.tflite", "tflite_micro/person_detect_int8.tflite"]


def test_schema_tables_match_the_installed_tflite_package():
    result = subprocess.run([sys.executable, str(REPO / "tools" / "make_tflite_schema_tables.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _package_options(operator) -> dict:
    """The options of one operator read with the generated class (the independent reference)."""
    names = {code: name for name, code in vars(tflite.BuiltinOptions).items() if not name.startswith("_")}
    table = operator.BuiltinOptions()
    options_class = getattr(tflite, names.get(operator.BuiltinOptionsType(), "NONE"), None)
    if table is None or options_class is None:
        return {}
    options = options_class()
    options.Init(table.Bytes, table.Pos)
    result = {}
    for name in vars(options_class):
        if name[0].isupper() and not name.startswith(("GetRootAs", "Init")) and \
                not name.endswith(("Length", "IsNone", "AsNumpy", "BufferHasIdentifier")):
            if hasattr(options_class, name + "AsNumpy"):
                value = getattr(options, name + "AsNumpy")()
                result[_snake(name)] = () if isinstance(value, int) else tuple(int(v) for v in value)
                continue
            try:
                value = getattr(options, name)()
            except TypeError:
                continue
            if isinstance(value, (bool, int, float)):
                result[_snake(name)] = value
    return result


@pytest.mark.parametrize("relative", MODELS)
def test_reader_reads_what_the_tflite_package_reads(relative):
    path = shared_model(relative)
    data = path.read_bytes()
    record = read_model(path, data)
    model = tflite.Model.GetRootAsModel(data, 0)
    subgraph = model.Subgraphs(0)
    assert len(record.operators) == subgraph.OperatorsLength() > 0
    for index, operator in enumerate(record.operators):
        reference = subgraph.Operators(index)
        assert operator.options == _package_options(reference), operator.op_name
        assert operator.inputs == tuple(int(v) for v in reference.InputsAsNumpy())
    assert len(record.tensors) == subgraph.TensorsLength()
    for index, tensor in enumerate(record.tensors):
        reference = subgraph.Tensors(index)
        assert (tensor.name, tensor.type_code, tensor.buffer) == (reference.Name().decode(), reference.Type(),
                                                                  reference.Buffer())
        assert tensor.shape == tuple(int(v) for v in reference.ShapeAsNumpy())
        quant = reference.Quantization()
        if tensor.quant is not None:
            np.testing.assert_array_equal(tensor.quant.scale, quant.ScaleAsNumpy())
            np.testing.assert_array_equal(tensor.quant.zero_point, quant.ZeroPointAsNumpy())
