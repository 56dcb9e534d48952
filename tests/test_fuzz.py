"""A seeded, bounded fuzz campaign over every class of bad input (the short version of
``benchmarks/fuzz_bench.py``): each case must end in an exit code of its error class (or 0),
without a traceback, a signal or a hang, and leave every file the command was not told to
write byte-identical (see :mod:`fuzz_harness`)."""
from __future__ import annotations

import pytest

import fuzz_cases
import fuzz_harness
from conftest import MODELS, shared_file

CASES_PER_FAMILY = 12
@pytest.mark.slow
def test_fuzz_campaign_has_no_failures():
    shared_file(MODELS)
    count = CASES_PER_FAMILY * len(fuzz_cases.FAMILIES)
    results = fuzz_harness.run_campaign(seed=20240, count=count, workers=2, timeout=30.0)
    assert len(results) == count
    failures = [f"{r.family}/{r.name}: {'; '.join(r.problems())}" for r in results if not r.passed]
    assert not failures, "\n".join(failures)
    counts = fuzz_harness.summary(results)
    assert set(counts) == set(fuzz_cases.FAMILIES)
    # the campaign must reach the commands' work, not only their first refusal
    assert sum(row.get("exit 0", 0) for row in counts.values()) > count // 10


def test_harness_detects_each_kind_of_failure(tmp_path):
    """The judge itself: an altered file, an escape printed, a missing error line."""
    before = {"a": "1", "b": "2", "out/x": "3"}
    after = {"a": "1", "b": "changed", "out/x": "4", "new": "5"}
    assert fuzz_harness.altered_files(before, after, ("out",)) == ["b", "new"]
    assert fuzz_harness.altered_files(before, after, ("out", "b", "new"), protect=("b",)) == ["b"]
    result = fuzz_harness.Result(0, "f", "n", code=2, bad_message=True)
    assert not result.passed and "no one-line error" in result.problems()[0]
    assert fuzz_harness.UNSAFE_OUTPUT.search("name \x1b[31m") and fuzz_harness.UNSAFE_OUTPUT.search("a\u202eb")
    assert not fuzz_harness.Result(0, "f", "n", code=11).passed


def test_cases_are_reproducible_from_the_seed():
    shared_file(MODELS)      # the cases carry shared models
    first, second = fuzz_cases.generate(7, 30), fuzz_cases.generate(7, 30)
    for index in range(30):
        assert first[index].argv == second[index].argv
        assert first[index].files == second[index].files


def test_harness_feeds_stdin_builds_fifos_and_sees_writes_outside(tmp_path):
    """The second campaign's judge: a case's own stdin (never the worker's), FIFOs in the case
    folder, and a file that appears beside the case folder is unsafe output."""
    root = tmp_path / "cases"
    root.mkdir()
    told = fuzz_cases.Case("doctor-logs", "stdin", {}, ["doctor", "-"],
                           stdin=b"does not fit: SRAM by 1024 bytes \x1b[2J\n")
    result = fuzz_harness.run_case(told, 0, root, timeout=20.0)
    assert result.passed and result.code == 0, result.problems()
    fifo = fuzz_cases.Case("doctor-logs", "fifo", {}, ["doctor", "f.log"], fifos=("f.log",))
    result = fuzz_harness.run_case(fifo, 1, root, timeout=20.0)
    assert result.passed and result.code == 2, result.problems()
    model = {"m.tflite": shared_file(MODELS / "tflite_micro/hello_world_int8.tflite").read_bytes()}
    outside = fuzz_cases.Case("output-paths", "outside", model, ["analyze", "m.tflite", "--json", "../out.json"])
    result = fuzz_harness.run_case(outside, 2, root, timeout=20.0)
    assert not result.passed and "wrote outside the case folder" in result.unsafe_output
