"""Static memory allocators: hand-computed instances, fit verdicts, CSV, validator, CLI.

Independent references: the live-set bound and greedy sizes are computed by hand in the
comments; the branch-and-bound optimum is checked against CP-SAT's proven optimum.
"""
from __future__ import annotations

import random
import subprocess
import sys

import pytest

from conftest import DATA, shared_file
from mcudeploy.cli.main import main
from mcudeploy.errors import DataError, DoesNotFitError, UsageError
from mcudeploy.plan import Buffer, Plan, allocate, describe_fit, fit_verdict, live_set_bound, require_fit
from mcudeploy.plan.allocators import ALLOCATORS
from mcudeploy.plan.fit import BOUND_EXCEEDS_CAPACITY, FITS, FRAGMENTATION
from mcudeploy.plan.minimalloc_csv import format_buffers, parse_buffers, read_buffers, read_plan_offsets, write_plan
from mcudeploy.plan.validate import InvalidPlanError, plan_problems, validate_plan

ALL = ["linear", "greedy", "search", "exact", "portfolio"]

# MiniMalloc's README example: live bytes per step 0..20 peak at 12 (b1+b3+b5 at 0..2,
# b2+b3+b5 at 3..8); linear = 5 * 4 = 20; greedy (all size 4, ties by start then input
# order: b1@0, b3@4, b5@8, b2@0, b4@0) reaches 12.
README = [Buffer("b1", 4, 0, 3), Buffer("b2", 4, 3, 9), Buffer("b3", 4, 0, 9),
          Buffer("b4", 4, 9, 21), Buffer("b5", 4, 0, 21)]

# Greedy misses: live 2,6,2,3,6 at steps 0..4 (bound 6). Greedy places 3@0, 1@0, 0@4,
# 2@6 (above 3 and 0), 4@4 -> 7. Optimum 6: 0@0, 1@2, 3@0, 2@4, 4@5.
GREEDY_MISSES = [Buffer(0, 2, 3, 5), Buffer(1, 4, 4, 5), Buffer(2, 1, 0, 4), Buffer(3, 4, 1, 2),
                 Buffer(4, 1, 0, 3)]

# Bound 6 fits no packing: at step 6, 4 and 5 fill [0,6); at step 2, 2, 3 and 6 (size 2)
# sit at even offsets; then at step 1 buffer 0 (size 3) finds no 3-byte gap beside 6.
# Optimum 7 (CP-SAT agrees).
FRAGMENTED = [Buffer(0, 3, 1, 2), Buffer(1, 1, 3, 6), Buffer(2, 2, 2, 6), Buffer(3, 2, 2, 4),
              Buffer(4, 3, 5, 7), Buffer(5, 3, 6, 8), Buffer(6, 2, 0, 3)]


def random_buffers(seed: int, count: int = 12, alignment: int = 1) -> list[Buffer]:
    rng = random.Random(seed)
    buffers = []
    for index in range(count):
        start = rng.randint(0, 10)
        buffers.append(Buffer(index, rng.randint(1, 40), start, start + rng.randint(1, 5),
                              alignment))
    return buffers


def test_bound_linear_greedy_on_hand_computed_instance():
    assert live_set_bound(README).bytes == 12
    assert live_set_bound(README).peak_intervals == [(0, 9)]
    assert allocate(README, "linear").arena_size == 20
    greedy = allocate(README, "greedy")
    assert greedy.arena_size == 12 and greedy.overhead_percent == 0
    assert greedy.offsets == {"b1": 0, "b3": 4, "b5": 8, "b2": 0, "b4": 0}


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("instance", [README, GREEDY_MISSES, FRAGMENTED], ids=["readme", "gap", "frag"])
def test_every_allocator_output_is_valid(name, instance):
    plan = allocate(instance, name, time_limit=5)
    validate_plan(instance, plan)
    assert plan.arena_size >= plan.lower_bound == live_set_bound(instance).bytes


def test_greedy_misses_but_the_optimum_fits():
    assert allocate(GREEDY_MISSES, "greedy").arena_size == 7
    assert live_set_bound(GREEDY_MISSES).bytes == 6
    greedy = allocate(GREEDY_MISSES, "greedy", capacity=6)
    assert fit_verdict(greedy) == FRAGMENTATION
    for name in ("search", "exact", "portfolio"):
        plan = allocate(GREEDY_MISSES, name, capacity=6, time_limit=5)
        validate_plan(GREEDY_MISSES, plan)
        assert plan.fits and plan.arena_size == 6 and fit_verdict(plan) == FITS


@pytest.mark.parametrize("name", ["search", "exact", "portfolio"])
def test_fragmentation_is_proven_and_explained(name):
    plan = allocate(FRAGMENTED, name, capacity=6, time_limit=5)
    validate_plan(FRAGMENTED, plan)
    assert not plan.fits and plan.proof == "infeasible"
    assert fit_verdict(plan) == FRAGMENTATION
    message = describe_fit(plan)
    assert "fragmentation" in message and "6 bytes" in message and "proved" in message
    assert allocate(FRAGMENTED, name, time_limit=5).arena_size == 7


def test_bound_above_capacity_names_step_buffers_and_shortfall():
    plan = allocate(README, "portfolio", capacity=10, time_limit=5)
    validate_plan(README, plan)
    assert not plan.fits and fit_verdict(plan) == BOUND_EXCEEDS_CAPACITY
    message = describe_fit(plan, {b.id: b.size for b in README})
    assert "2 bytes (0.0 KiB) more than the capacity 10 bytes" in message
    assert "at step 0" in message and "b1 (4 bytes)" in message and "no packing" in message
    with pytest.raises(DoesNotFitError):
        require_fit(plan)


@pytest.mark.parametrize("seed", range(4))
def test_search_optimum_matches_cp_sat(seed):
    buffers = random_buffers(seed)
    search = allocate(buffers, "search", time_limit=5)
    exact = allocate(buffers, "exact", time_limit=5)
    for plan in (search, exact):
        validate_plan(buffers, plan)
        assert plan.proof == "optimal"
    assert search.arena_size == exact.arena_size <= allocate(buffers, "greedy").arena_size


@pytest.mark.parametrize("name", ALL)
def test_alignment_rounds_sizes_and_aligns_offsets(name):
    buffers = random_buffers(5, count=8, alignment=16)
    plan = allocate(buffers, name, time_limit=5)
    validate_plan(buffers, plan)
    assert all(offset % 16 == 0 for offset in plan.offsets.values())
    assert plan.lower_bound % 16 == 0


def test_validator_catches_overlap_misalignment_and_false_fit():
    buffers = [Buffer(0, 4, 0, 2), Buffer(1, 4, 1, 3, alignment=4)]
    overlapping = Plan({0: 0, 1: 0}, 4, 8, "hand")
    assert any("overlap" in p for p in plan_problems(buffers, overlapping))
    with pytest.raises(InvalidPlanError):
        validate_plan(buffers, overlapping)
    misaligned = Plan({0: 0, 1: 6}, 10, 8, "hand")
    assert any("alignment" in p for p in plan_problems(buffers, misaligned))
    assert plan_problems(buffers, Plan({0: 0, 1: 4}, 8, 8, "hand")) == []
    false_fit = Plan({0: 0, 1: 4}, 8, 8, "hand", capacity=8)
    false_fit.offsets[1] = 8    # arena now 12 but recorded 8
    assert plan_problems(buffers, false_fit)


def test_csv_round_trip(tmp_path):
    source = tmp_path / "in.csv"
    source.write_text(format_buffers(README))
    buffers = read_buffers(source)
    assert buffers == README
    plan = allocate(buffers, "greedy")
    write_plan(tmp_path / "out.csv", buffers, plan)
    assert read_plan_offsets(tmp_path / "out.csv") == plan.offsets
    assert (tmp_path / "out.csv").read_text().splitlines()[0] == "id,lower,upper,size,offset"


@pytest.mark.parametrize("text, expected", [
    ("a,b,c\n1,2,3\n", ":1: header"),
    ("id,lower,upper,size\n0,0,x,4\n", ":2: upper must be an integer"),
    ("id,lower,upper,size\n0,3,3,4\n", ":2: lower (3) must be less than upper"),
    ("id,lower,upper,size\n0,0,3,0\n", ":2: size and alignment must be positive"),
    ("id,lower,upper,size\n0,0,3,4\n0,1,2,4\n", ":3: buffer id '0' already used on line 2"),
    ("id,lower,upper,size\n0,0,3\n", ":2: expected 4 values"),
    ("", ":1: header"),
])
def test_bad_csv_names_file_and_line(tmp_path, text, expected):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(DataError) as error:
        read_buffers(path)
    assert str(path) + expected in str(error.value)


def test_missing_csv_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError):
        read_buffers(tmp_path / "absent.csv")
    assert parse_buffers("id,lower,upper,size\n\n") == []


@pytest.mark.parametrize("capacity, code", [("12", 0), ("6", 8), ("10", 8), ("1K", 0), ("ten", 2)])
def test_cli_exit_codes(tmp_path, capsys, capacity, code):
    source, output = tmp_path / "in.csv", tmp_path / "out.csv"
    source.write_text(format_buffers(FRAGMENTED if capacity == "6" else README))
    argv = ["plan", "--allocation-csv", str(source), "--capacity", capacity, "-o", str(output),
            "--time-limit", "5"]
    assert main(argv) == code
    captured = capsys.readouterr()
    assert output.exists() == (code == 0)
    if code == 0:
        assert "lower bound" in captured.out and "fits" in captured.out
        assert set(read_plan_offsets(output)) == {b.id for b in (README)}
    elif code == 8:
        assert "does not fit" in captured.err and "KiB" in captured.err


def test_cli_usage_errors(tmp_path):
    assert main(["plan", "--capacity", "1M"]) == 2
    assert main(["plan", "--allocation-csv", str(tmp_path / "absent.csv")]) == 2
    bad = tmp_path / "bad.csv"
    bad.write_text("id,lower,upper,size\n0,5,1,4\n")
    assert main(["plan", "--allocation-csv", str(bad)]) == 7


def test_cli_runs_as_a_process(tmp_path):
    source = tmp_path / "in.csv"
    source.write_text(format_buffers(README))
    proc = subprocess.run([sys.executable, "-m", "mcudeploy", "plan", "--allocation-csv",
                           str(source), "--capacity", "8", "--allocator", "greedy"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 8 and "no packing can help" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_allocators_are_registered():
    assert {"linear", "greedy", "search", "exact"} <= set(ALLOCATORS)


@pytest.mark.parametrize("name", ["J", "K"])
def test_challenging_minimalloc_instance_fits_one_mebibyte(name):
    path = DATA / "minimalloc_challenging" / f"{name}.1048576.csv"
    shared_file(path)
    buffers = read_buffers(path)
    assert allocate(buffers, "greedy", capacity=1 << 20).arena_size > 1 << 20
    plan = allocate(buffers, "search", capacity=1 << 20, time_limit=30)
    validate_plan(buffers, plan)
    assert plan.fits and plan.proof == "feasible"
