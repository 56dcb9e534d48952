"""Validation data: random samples, .npz / .npy loading, the sample axis, labels, and every
data error raised before any model runs."""
from __future__ import annotations

import numpy as np
import pytest

from mcudeploy.cli.main import main
from mcudeploy.errors import DataError, UsageError
from mcudeploy.ir import DType, Graph, QuantParams, verify
from mcudeploy.validate import engines
from mcudeploy.validate.data import load_labels, load_samples, parse_range, random_samples
from validate_pairs import tiny_pair


def two_input_graph() -> Graph:
    graph = Graph("two")
    a = graph.add_input("a", DType.FLOAT32, (1, 4))
    b = graph.add_input("b", DType.FLOAT32, (1, 4))
    graph.outputs = [graph.add_node("Add", [a, b], name="sum").outputs[0]]
    verify(graph)
    return graph


def int8_graph() -> Graph:
    graph = Graph("q")
    x = graph.add_input("x", DType.INT8, (1, 3), quant=QuantParams(np.float32(0.1), 0))
    graph.outputs = [graph.add_node("Reshape", [x], {"shape": (3,)}, name="flat").outputs[0]]
    verify(graph)
    return graph


@pytest.mark.parametrize("shape, count, batched", [((1, 4), 1, False), ((5, 1, 4), 5, True),
                                                   ((5, 4), 5, True)])
def test_sample_axis_forms(tmp_path, shape, count, batched):
    data = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    np.savez(tmp_path / "x.npz", a=data, b=data)
    samples = load_samples(tmp_path / "x.npz", two_input_graph())
    assert samples.count == count and samples.batched is batched
    assert samples.arrays["a"].shape == (count, 1, 4) and samples.arrays["a"].dtype == np.float32
    np.testing.assert_array_equal(samples.arrays["b"].reshape(-1), data.reshape(-1))


def test_single_input_takes_npy_and_one_key_npz(tmp_path):
    graph = int8_graph()
    data = np.array([[1, 2, 3], [4, 5, 6]], np.int8)
    np.save(tmp_path / "x.npy", data)
    np.savez(tmp_path / "named.npz", x=data)
    np.savez(tmp_path / "unnamed.npz", data)
    for name in ("x.npy", "named.npz", "unnamed.npz"):
        samples = load_samples(tmp_path / name, graph)
        assert samples.arrays["x"].shape == (2, 1, 3) and samples.arrays["x"].dtype == np.int8


def test_one_key_npz_under_another_name_is_refused_naming_it(tmp_path):
    np.savez(tmp_path / "x.npz", whatever=np.zeros((2, 1, 3), np.int8))
    with pytest.raises(DataError, match="arrays whatever do not match the model inputs x"):
        load_samples(tmp_path / "x.npz", int8_graph())


def test_random_samples_are_seeded_and_in_range():
    graph = two_input_graph()
    first = random_samples(graph, 7, 3, (2.0, 5.0))
    again = random_samples(graph, 7, 3, (2.0, 5.0))
    other = random_samples(graph, 7, 4, (2.0, 5.0))
    assert first.arrays["a"].shape == (7, 1, 4) and first.count == 7
    assert np.array_equal(first.arrays["a"], again.arrays["a"])
    assert not np.array_equal(first.arrays["a"], other.arrays["a"])
    assert first.arrays["a"].min() >= 2.0 and first.arrays["a"].max() < 5.0
    integers = random_samples(int8_graph(), 50, 0, (-300.0, 3.0)).arrays["x"]
    assert integers.dtype == np.int8 and integers.min() == -128 and integers.max() == 3


@pytest.mark.parametrize("text", ["1", "a,b", "2,1", "0,inf", "1,1"])
def test_bad_range(text):
    with pytest.raises(UsageError, match="--range"):
        parse_range(text)


def test_range_parses():
    assert parse_range("-1.5,2") == (-1.5, 2.0)


BAD_DATA = {
    "nan": (lambda a: np.where(a > 2, np.nan, a), "NaN / Inf"),
    "inf": (lambda a: np.where(a > 2, np.inf, a), "NaN / Inf"),
    "shape": (lambda a: a.reshape(3, 8), "shape \\[3, 8\\]"),
    "dtype": (lambda a: a.astype(np.int32), "is int32"),
}


@pytest.mark.parametrize("case", sorted(BAD_DATA))
def test_bad_data_names_the_input(tmp_path, case):
    change, message = BAD_DATA[case]
    good = np.linspace(0, 3, 24).reshape(6, 1, 4)
    np.savez(tmp_path / "x.npz", a=good, b=change(good))
    with pytest.raises(DataError, match=message) as error:
        load_samples(tmp_path / "x.npz", two_input_graph())
    assert "'b'" in str(error.value) and "x.npz" in str(error.value)


@pytest.mark.parametrize("arrays, message", [
    ({"a": np.zeros((2, 4))}, "missing: b"),
    ({"a": np.zeros((2, 4)), "b": np.zeros((2, 4)), "c": np.zeros(1)}, "unknown: c"),
    ({"a": np.zeros((2, 4)), "b": np.zeros((3, 4))}, "different sample counts"),
])
def test_npz_keys_and_counts(tmp_path, arrays, message):
    np.savez(tmp_path / "x.npz", **arrays)
    with pytest.raises(DataError, match=message):
        load_samples(tmp_path / "x.npz", two_input_graph())


def test_float_data_for_int8_input_is_refused(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((2, 3), np.float32))
    with pytest.raises(DataError, match="quantize the data"):
        load_samples(tmp_path / "x.npy", int8_graph())


def test_unreadable_file(tmp_path):
    (tmp_path / "x.npz").write_bytes(b"not numpy")
    with pytest.raises(DataError, match="not a readable"):
        load_samples(tmp_path / "x.npz", two_input_graph())
    with pytest.raises(UsageError, match="no such data file"):
        load_samples(tmp_path / "missing.npz", two_input_graph())


def test_labels(tmp_path):
    np.save(tmp_path / "y.npy", np.array([2.0, 0.0, 1.0]))
    assert load_labels(tmp_path / "y.npy", 3, 3).tolist() == [2, 0, 1]
    cases = {"count": (np.array([0, 1]), "2 labels for 3 samples"),
             "range": (np.array([0, 1, 5]), "label 5 \\(sample 2\\) is outside"),
             "negative": (np.array([0, -1, 1]), "label -1"),
             "fraction": (np.array([0.5, 1, 1]), "whole class indices"),
             "rank": (np.zeros((3, 2)), "1-D array")}
    for name, (labels, message) in cases.items():
        np.save(tmp_path / f"{name}.npy", labels)
        with pytest.raises(DataError, match=message):
            load_labels(tmp_path / f"{name}.npy", 3, 3)


@pytest.fixture
def no_engine_runs(monkeypatch):
    """Replace every engine by one that records calls; yields the call list."""
    calls = []
    for name, entry in list(engines.ENGINES.items()):
        def spy(graph, feeds, *, capture=False, _name=name):
            calls.append(_name)
            raise AssertionError("an engine ran before the data was checked")
        monkeypatch.setitem(engines.ENGINES, name, engines.Engine(name, entry.description, spy))
    return calls


CLI_CASES = {
    "nan": (lambda x: np.where(x > 0.5, np.nan, x), None),
    "inf": (lambda x: np.where(x > 0.5, -np.inf, x), None),
    "shape": (lambda x: x[:, :, :5], None),
    "dtype": (lambda x: (x * 100).astype(np.int16), None),
    "labels_count": (lambda x: x, np.array([0, 1, 2])),
    "labels_range": (lambda x: x, np.array([0, 1, 2, 5])),
}


@pytest.mark.parametrize("case", sorted(CLI_CASES))
def test_cli_data_errors_before_any_run(tmp_path, no_engine_runs, capsys, case):
    float_path, int8_path = tiny_pair(tmp_path)
    change, labels = CLI_CASES[case]
    data = np.random.default_rng(0).uniform(-1, 1, (4, 6, 6, 2)).astype(np.float32)
    np.save(tmp_path / "x.npy", change(data))
    args = ["validate", str(float_path), "--quantized", str(int8_path), "--data", str(tmp_path / "x.npy")]
    if labels is not None:
        np.save(tmp_path / "y.npy", labels)
        args += ["--labels", str(tmp_path / "y.npy")]
    assert main(args) == DataError.exit_code
    assert no_engine_runs == []
    error = capsys.readouterr().err
    assert ("y.npy" if labels is not None else "input 'x'") in error
    np.save(tmp_path / "x.npy", change(data))
    run_args = ["run", str(float_path), "--inputs", str(tmp_path / "x.npy"), "-o", str(tmp_path / "y.npz")]
    if labels is None:
        assert main(run_args) == DataError.exit_code and no_engine_runs == []
