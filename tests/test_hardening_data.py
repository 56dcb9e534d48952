"""Data files (issue 16): every reader (``quantize --calib``, ``run --inputs``, ``validate
--data`` / ``--labels``, ``generate --test-vectors``) refuses the same bad files with a
:class:`DataError` before allocating, and accepts / refuses the same arrays. Pickles are
never unpickled."""
from __future__ import annotations

import io
import pickle
import random
import struct

import numpy as np
import pytest

import fuzz_cases
from mcudeploy.cli.main import main
from mcudeploy.data_files import npz_bytes, read_arrays
from mcudeploy.errors import DataError, UsageError
from mcudeploy.ir import DType, Graph
from mcudeploy.quantize.calibration import ImagePreprocessing, load_calibration
from mcudeploy.validate.data import load_labels, load_samples, random_samples


class Unpickled(Exception):
    pass


class _Payload:
    def __reduce__(self):   # what a malicious pickle does: run code while loading
        return (_explode, ())


def _explode():
    raise Unpickled("the pickle was loaded")


def _npz(**arrays) -> bytes:
    stream = io.BytesIO()
    np.savez(stream, **arrays)
    return stream.getvalue()


def _zip_with(flag: int = 0, method: int | None = None) -> bytes:
    data = bytearray(_npz(x=np.ones(8, np.float32)))
    for signature, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        position = data.find(signature)
        data[position + at] |= flag
        if method is not None:
            struct.pack_into("<H", data, position + at + 2, method)
    return bytes(data)


def _huge_header(shape=(10**12,)) -> bytes:
    stream = io.BytesIO()
    np.lib.format.write_array_header_1_0(stream, {"descr": "<f4", "fortran_order": False, "shape": shape})
    return stream.getvalue() + bytes(16)


def _bad_crc() -> bytes:
    data = bytearray(_npz(x=np.arange(64, dtype=np.float32)))
    data[data.find(b"NUMPY") + 140] ^= 0xFF
    return bytes(data)


BAD_FILES = {
    "empty": (b"", "empty"),
    "pickle": (pickle.dumps(_Payload()), "pickle"),
    "object array": (b"".join([b"\x93NUMPY\x01\x00", struct.pack("<H", 118),
                               b"{'descr': '|O', 'fortran_order': False, 'shape': (2,), }".ljust(117) + b"\n",
                               pickle.dumps([_Payload(), 1])]), "object arrays and pickles are never loaded"),
    "truncated npz": (_npz(x=np.ones(64, np.float32))[:100], "not a readable"),
    "bad crc": (_bad_crc(), "CRC|not a readable"),
    "encrypted": (_zip_with(flag=0x1), "encrypted"),
    "unknown compression": (_zip_with(method=99), "compression method 99"),
    "1e12 elements": (_huge_header(), "memory budget"),
    "declared but missing": (_huge_header((1000,)), "truncated"),
    "strings": (_npz(x=np.array(["a", "b"])), "give numbers"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_data_files_are_refused_before_loading(tmp_path, name):
    data, words = BAD_FILES[name]
    path = tmp_path / "x.npz"
    path.write_bytes(data)
    with pytest.raises(DataError, match=words):
        read_arrays(path)


def _graph(dtype=DType.FLOAT32) -> Graph:
    graph = Graph("g")
    x = graph.add_input("x", dtype, (1, 4))
    graph.add_node("Relu" if dtype.is_float else "Identity", [x], name="n")
    graph.outputs = [graph.nodes[0].outputs[0]]
    return graph


@pytest.mark.parametrize("arrays, words", [
    ({"x": np.ones((3, 1, 4), np.int64)}, "is int64"), ({"x": np.ones((3, 1, 4), bool)}, "is bool"),
    ({"x": np.ones((3, 1, 4), np.float32), "extra": np.ones(2)}, "unknown: extra"),
    ({"y": np.ones((3, 1, 4), np.float32), "z": np.ones(1)}, "no data for input"),
])
def test_quantize_run_and_validate_refuse_the_same_arrays(tmp_path, arrays, words):
    path = tmp_path / "x.npz"
    path.write_bytes(npz_bytes(arrays))
    with pytest.raises(DataError, match=words):
        load_samples(path, _graph())
    with pytest.raises(DataError, match=words):
        load_calibration(path, _graph())


def test_npz_bytes_takes_any_key():
    arrays = {"file": np.ones(2), "allow_pickle": np.zeros(1, np.int8)}
    stream = io.BytesIO(npz_bytes(arrays))
    with np.load(stream) as loaded:
        assert sorted(loaded.files) == ["allow_pickle", "file"]


def test_a_decompression_bomb_png_is_refused_from_its_header(tmp_path):
    graph = Graph("g")
    x = graph.add_input("x", DType.FLOAT32, (1, 1, 8, 8), layout="NCHW")
    graph.add_node("Relu", [x], name="n")
    graph.outputs = [graph.nodes[0].outputs[0]]
    (tmp_path / "images").mkdir()
    for side in (10000, 30000):   # over our limit; over Pillow's own (a 2x bomb) too
        (tmp_path / "images" / "bomb.png").write_bytes(fuzz_cases._png_bomb(side))
        with pytest.raises(DataError, match="pixels.*(bomb)"):
            load_calibration(tmp_path / "images", graph)
    (tmp_path / "images" / "bomb.png").write_bytes(fuzz_cases._png(8, 8, "L"))
    with pytest.raises(UsageError, match="--mean 0.1,0.2,0.3: 3 values"):
        load_calibration(tmp_path / "images", graph,
                         preprocessing=ImagePreprocessing(mean=(0.1, 0.2, 0.3)))
    assert len(load_calibration(tmp_path / "images", graph)) == 1


@pytest.mark.parametrize("labels, words", [
    (np.array([0.5, 1.0]), "whole class indices"), (np.zeros((2, 2)), "1-D"),
    (np.array([0, 1, 2]), "3 labels for 2"), (np.array([0, 7]), "outside"),
])
def test_labels(tmp_path, labels, words):
    path = tmp_path / "y.npy"
    np.save(path, labels)
    with pytest.raises(DataError, match=words):
        load_labels(path, 2, 4)


def test_random_samples_within_the_budget_and_for_bool_inputs():
    with pytest.raises(UsageError, match="memory budget"):
        random_samples(_graph(), 10**9, 0, (0.0, 1.0))
    with pytest.raises(UsageError, match="--seed -1"):
        random_samples(_graph(), 2, -1, (0.0, 1.0))
    samples = random_samples(_graph(DType.BOOL), 3, 0, (0.0, 1.0))
    assert samples.arrays["x"].dtype == np.bool_ and samples.arrays["x"].shape == (3, 1, 4)


def test_cli_data_errors_are_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MCUDEPLOY_NO_RECORD", "1")
    (tmp_path / "m.onnx").write_bytes(fuzz_cases._tiny_float_model(random.Random(0)))
    (tmp_path / "p.npz").write_bytes(pickle.dumps(_Payload()))
    for argv in (["quantize", "m.onnx", "--calib", "p.npz", "-o", "q.onnx"],
                 ["run", "m.onnx", "--inputs", "p.npz", "-o", "o.npz"]):
        assert main(argv) == 7
        err = capsys.readouterr().err
        assert err.count("mcudeploy: error:") == 1 and "pickle" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "p.npz"]
