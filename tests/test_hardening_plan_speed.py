"""Planning in linear time on long chains (issue 16: a 10,000-node chain took 3 minutes),
with results identical to the straightforward quadratic versions kept here as oracles:
the schedule search, greedy-by-size and paired first-fit placement."""
from __future__ import annotations

import random
import time
from collections import OrderedDict

import pytest
from onnx import helper

from conftest import INT8_MODELS, shared_model
from mcudeploy.cli.main import main
from mcudeploy.importers import load_model
from mcudeploy.plan import paired_greedy, schedule
from mcudeploy.plan.allocators import greedy
from mcudeploy.plan.buffers import Buffer
from onnx_builders import make_model, save


def quadratic_search(problem, count, beam_width, deadline):
    """The search before issue 16: every node tested at every state."""
    level = {0: (0, problem.initial, None, None)}
    history, exact, states = [level], True, 1
    for _ in range(count):
        following = {}
        for state, (peak, live, _, _) in level.items():
            for node in range(count):
                if state >> node & 1 or problem.predecessors[node] & ~state:
                    continue
                after, step, live_after = schedule._expand(problem, state, live, node)
                candidate = (max(peak, step), live_after, state, node)
                if after not in following or candidate[:2] < following[after][:2]:
                    following[after] = candidate
        states += len(following)
        if len(following) > beam_width:
            exact = False
            following = dict(sorted(following.items(), key=lambda item: item[1][:2])[:beam_width])
        history.append(following)
        level = following
    return history, exact, states, False


def quadratic_greedy(ordered):
    offsets, placed = {}, []
    for buffer in ordered:
        ranges = [(offsets[p.id], offsets[p.id] + p.packed_size) for p in placed if p.overlaps_in_time(buffer)]
        offsets[buffer.id] = greedy.lowest_offset(buffer, ranges)
        placed.append(buffer)
    return offsets


def quadratic_paired(ordered, pairs, alignment, reserve):
    output_of_input = {inp: out for out, inp in pairs}
    by_id, offsets, placed = {b.id: b for b in ordered}, {}, []
    for buffer in ordered:
        pending = output_of_input.get(buffer.id)
        reserve_for = by_id[pending] if reserve and pending is not None and pending not in offsets else None
        intervals = []
        if reserve_for is not None:
            intervals.append((-1, min(paired_greedy.align_up(pairs[reserve_for.id, buffer.id], alignment),
                                      reserve_for.packed_size)))
        for other in placed:
            intervals += paired_greedy._forbidden(buffer, other, offsets[other.id], pairs, reserve_for, alignment)
        offsets[buffer.id] = paired_greedy.lowest_free(intervals, alignment)
        placed.append(buffer)
    return offsets


def _random_buffers(rng: random.Random) -> list[Buffer]:
    buffers = []
    for index in range(rng.randint(1, 60)):
        start = rng.randint(0, 30)
        end = start + rng.randint(0 if rng.random() < 0.1 else 1, 10)   # some empty lifetimes
        buffers.append(Buffer(index, rng.randint(1, 100), start, end, rng.choice([1, 4, 16])))
    return buffers


@pytest.mark.parametrize("seed", range(40))
def test_placements_equal_the_quadratic_versions(seed):
    rng = random.Random(seed)
    buffers = _random_buffers(rng)
    ordered = greedy.greedy_order(buffers)
    assert greedy.place_in_order(ordered) == quadratic_greedy(ordered)
    pairs = {}
    for _ in range(len(buffers) // 2):
        output, source = rng.sample(range(len(buffers)), 2) if len(buffers) > 1 else (0, 0)
        if output != source:
            pairs[output, source] = rng.randint(0, 50)
    for reserve in (True, False):
        rng.shuffle(ordered)
        assert paired_greedy.place(ordered, pairs, 16, reserve) == quadratic_paired(ordered, pairs, 16, reserve)


@pytest.mark.parametrize("model", INT8_MODELS[:5] + ["onnx/mobilenetv2_0.5_128.onnx"])
def test_schedules_equal_the_quadratic_search(model, monkeypatch):
    graph = load_model(shared_model(model))
    monkeypatch.setattr(schedule, "_SEARCHED", OrderedDict())   # both searches run, none is remembered
    monkeypatch.setattr(schedule, "SEARCHED_KEPT", 0)
    fast = schedule.schedule(graph, beam_width=16)
    monkeypatch.setattr(schedule, "_search", quadratic_search)
    slow = schedule.schedule(graph, beam_width=16)
    assert (fast.order, fast.peak, fast.exact, fast.states) == (slow.order, slow.peak, slow.exact, slow.states)


@pytest.mark.slow
@pytest.mark.parametrize("op", ["Relu", "Add"])
def test_plan_of_a_10000_node_chain_takes_seconds(tmp_path, monkeypatch, capsys, op):
    names = ["x"] + [f"t{i}" for i in range(10000)]
    inputs = (lambda i: [names[i]]) if op == "Relu" else (lambda i: [names[i], "x"])
    nodes = [helper.make_node(op, inputs(i), [names[i + 1]], name=f"n{i}") for i in range(10000)]
    path = save(make_model(nodes, {"x": [1, 8]}, [names[-1]], opset=13), tmp_path)
    monkeypatch.setenv("MCUDEPLOY_NO_RECORD", "1")
    started = time.process_time()
    assert main(["plan", str(path), "--json", str(tmp_path / "p.json")]) == 0
    assert time.process_time() - started < 30     # 80-270 s before issue 16; ~3-5 s now


def test_a_searched_order_is_remembered_by_problem(monkeypatch):
    """The same scheduling problem (another graph object with the same structure and sizes)
    takes the remembered order without searching; a different scratch or alignment, a
    narrower beam, or a search cut by its deadline is searched (and the last not kept)."""
    monkeypatch.setattr(schedule, "_SEARCHED", OrderedDict())
    searched = []
    real = schedule._search

    def counted(*args):
        searched.append(args[2])
        return real(*args)
    monkeypatch.setattr(schedule, "_search", counted)
    model = "mlperf_tiny/mobilenetv1_vww_int8.tflite"
    first = schedule.schedule(load_model(shared_model(model)), beam_width=16)
    again = schedule.schedule(load_model(shared_model(model)), beam_width=16)
    assert len(searched) == 1 and (again.order, again.peak, again.exact) == (first.order, first.peak, first.exact)
    schedule.schedule(load_model(shared_model(model)), beam_width=8)
    schedule.schedule(load_model(shared_model(model)), beam_width=16, alignment=64)
    schedule.schedule(load_model(shared_model(model)), beam_width=16, scratch_bytes=lambda node: 4096)
    assert len(searched) == 4
    cut = schedule.schedule(load_model(shared_model("onnx/mobilenetv2_0.5_128.onnx")), beam_width=64, time_limit=0.0)
    schedule.schedule(load_model(shared_model("onnx/mobilenetv2_0.5_128.onnx")), beam_width=64, time_limit=0.0)
    assert not cut.exact and len(searched) == 6
