"""The worker's batching loop, turn by turn: requests join and leave one shared batch between steps."""
from __future__ import annotations

import json
import time

import pytest

from tests.fixtures.worker import worker_job
from webapp.playground.worker.batcher import Batcher, Tick
from webapp.playground.worker.lanes import Job


def job(request_id: str, **changes) -> Job:
    return worker_job(request_id, changes.pop("params", None), **changes)


def frames(tick: Tick, request_id: str | None = None) -> list[dict]:
    return [json.loads(o.text) for o in tick.out if request_id in (None, o.request_id)]


def run(batcher: Batcher, turns: int = 200, **control) -> list[dict]:
    out: list[dict] = []
    for _ in range(turns):
        if not batcher.in_flight:
            break
        out += frames(batcher.tick(jobs=[], cancels=set(), credits={}, **control))
    return out


def test_requests_that_arrive_together_share_every_step(loaded):
    batcher = Batcher()
    first = batcher.tick(jobs=[(job("a"), loaded), (job("b"), loaded)], cancels=set(), credits={})
    out = frames(first) + run(batcher)
    for rid in "ab":
        tokens = [f for f in out if f["request_id"] == rid and f["type"] == "token"]
        assert [t["seq"] for t in tokens] == list(range(6))
        assert all(t["timing"]["batch_rows"] == 2 for t in tokens)
    assert [f["type"] for f in out if f["request_id"] == "a"][-1] == "done"


def test_a_request_joins_a_running_batch_between_two_steps(loaded):
    batcher = Batcher()
    batcher.tick(jobs=[(job("a", params={"strategy": "greedy", "min_len": 20, "max_len": 20}), loaded)],
                 cancels=set(), credits={})
    batcher.tick(jobs=[], cancels=set(), credits={})
    joined = frames(batcher.tick(jobs=[(job("b"), loaded)], cancels=set(), credits={}))
    assert [(f["request_id"], f["type"]) for f in joined] == [("b", "start"), ("a", "token"), ("b", "token")]
    assert joined[1]["seq"] == 2 and joined[2]["seq"] == 0
    assert joined[1]["timing"]["batch_rows"] == 2


def test_a_paced_request_waits_between_tokens_without_holding_back_the_others(loaded):
    batcher = Batcher()
    slow = job("slow", pace_ms=5000, params={"strategy": "greedy", "min_len": 20, "max_len": 20})
    batcher.tick(jobs=[(slow, loaded), (job("fast"), loaded)], cancels=set(), credits={})
    out = run(batcher, turns=5)
    assert [f["type"] for f in out if f["request_id"] == "fast"][-1] == "done"
    assert not [f for f in out if f["request_id"] == "slow"]  # 5 quick turns: still inside its 5 s
    assert batcher.tick(jobs=[], cancels=set(), credits={}).wake_in > 0.0  # the loop may sleep now


def test_step_mode_takes_one_step_per_credit(loaded):
    batcher = Batcher()
    start = batcher.tick(jobs=[(job("s", step_mode=True), loaded)], cancels=set(), credits={})
    assert [f["type"] for f in frames(start)] == ["start"]
    assert start.stepping == ["s"] and start.wake_in is not None
    assert frames(batcher.tick(jobs=[], cancels=set(), credits={})) == []
    two = frames(batcher.tick(jobs=[], cancels=set(), credits={"s": 2}))
    two += frames(batcher.tick(jobs=[], cancels=set(), credits={}))
    assert [f["seq"] for f in two] == [0, 1]
    assert frames(batcher.tick(jobs=[], cancels=set(), credits={})) == []


def test_cancel_and_the_time_limit_end_a_request_with_its_reason(loaded):
    batcher = Batcher()
    long = {"strategy": "greedy", "min_len": 50, "max_len": 50}
    tick = batcher.tick(jobs=[(job("c", params=long), loaded), (job("t", params=long), loaded)], cancels=set(),
                        credits={})
    cancelled = frames(batcher.tick(jobs=[], cancels={"c"}, credits={}), "c")
    assert [(f["type"], f.get("reason")) for f in cancelled] == [("done", "cancelled")]
    late = time.time() + 61
    timed_out = frames(batcher.tick(jobs=[], cancels=set(), credits={}, now=late), "t")
    assert [(f["type"], f.get("reason")) for f in timed_out] == [("done", "time_limit")]
    assert not batcher.in_flight and tick.in_flight == ["c", "t"]


def test_the_token_cap_holds_whatever_the_request_asked(loaded):
    batcher = Batcher()
    batcher.tick(jobs=[(job("m", max_tokens=5, params={"strategy": "greedy", "min_len": 9}), loaded)], cancels=set(),
                 credits={})
    done = run(batcher)[-1]
    assert (done["type"], done["steps"], done["reason"]) == ("done", 5, "max_len")


def test_compare_cache_times_each_step_without_the_cache_and_the_cache_grows(loaded):
    batcher = Batcher()
    out = frames(batcher.tick(jobs=[(job("k", compare_cache=True), loaded)], cancels=set(), credits={})) + run(batcher)
    tokens = [f for f in out if f["type"] == "token"]
    assert all(t["timing"]["recompute_ms"] > 0 and t["timing"]["step_ms"] > 0 for t in tokens)
    sizes = [t["cache"]["bytes"] for t in tokens]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    assert [t["cache"]["self_positions"] for t in tokens] == list(range(1, 7))


def test_the_uncached_time_is_measured_once_per_length_and_read_by_later_requests(loaded):
    batcher = Batcher()
    first = frames(batcher.tick(jobs=[(job("a", compare_cache=True), loaded)], cancels=set(), credits={}))
    first += run(batcher)
    (table,) = batcher.recompute.ms.values()
    assert len(table) == 6  # one uncached step per step of the first request
    out = frames(batcher.tick(jobs=[(job(rid, compare_cache=True), loaded) for rid in "bcdefgh"], cancels=set(),
                              credits={})) + run(batcher)
    assert len(table) == 6  # seven more requests of the same length measured nothing
    expected = [f["timing"]["recompute_ms"] for f in first if f["type"] == "token"]
    for rid in "bcdefgh":
        assert [f["timing"]["recompute_ms"] for f in out if f["request_id"] == rid and f["type"] == "token"] == expected


def test_a_turn_measures_a_few_new_lengths_and_leaves_the_rest_for_later(loaded):
    from webapp.playground.worker.recompute import MEASURES_PER_TURN

    batcher = Batcher()
    sources = ["3", "3 h", "3 h 9", "3 h 9 5", "3 h 9 5 g", "3 h 9 5 g 1", "3 h 9 5 g 1 2"]  # seven lengths
    first = batcher.tick(jobs=[(job(str(i), source=s, compare_cache=True), loaded) for i, s in enumerate(sources)],
                         cancels=set(), credits={})
    timed = [f for f in frames(first) if f["type"] == "token" and "recompute_ms" in f["timing"]]
    assert len(timed) == MEASURES_PER_TURN < len(sources)
    assert all("step_ms" in f["timing"] for f in frames(first) if f["type"] == "token")


def test_a_beam_request_streams_beams_frames_and_its_best_hypotheses(loaded):
    batcher = Batcher()
    beam = {"strategy": "beam", "beam_size": 3, "n_best": 2, "min_len": 4, "max_len": 4, "capture_attention": True}
    out = frames(batcher.tick(jobs=[(job("b", params=beam), loaded)], cancels=set(), credits={})) + run(batcher)
    steps = [f for f in out if f["type"] == "beams"]
    assert [s["seq"] for s in steps] == [0, 1, 2, 3]
    assert len(steps[1]["beams"]) == 3 and "attention" in steps[1]["beams"][0]
    assert len(out[-1]["n_best"]) == 2


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"source": " ".join(["3"] * 70)}, "source_too_long"),  # the tiny model has 64 positions
        ({"params": {"strategy": "beam", "beam_size": 2, "n_best": 3}}, "bad_params"),
    ],
)
def test_a_request_the_model_cannot_take_gets_an_error_frame(loaded, changes, code):
    batcher = Batcher()
    tick = batcher.tick(jobs=[(job("e", **changes), loaded)], cancels=set(), credits={})
    (error,) = frames(tick)
    assert (error["type"], error["code"], error["request_id"]) == ("error", code, "e")
    assert [e.reason for e in tick.ended] == ["error"] and not batcher.in_flight


def test_a_model_that_would_not_load_is_reported_to_its_client(loaded):
    tick = Batcher().tick(jobs=[(job("x"), FileNotFoundError("/srv/models/tiny/model.safetensors"))], cancels=set(),
                          credits={})
    (error,) = frames(tick)
    assert error["code"] == "model_unavailable" and "tiny" in error["message"]
    assert "/srv" not in error["message"]  # the server's paths stay in its log


def test_a_shared_lane_keeps_its_cache_for_the_next_class_and_goes_when_unused_long_enough(loaded):
    from webapp.playground.worker import batcher as batcher_module
    from webapp.playground.worker.lanes import SHARED_LANE_ROWS

    batcher = Batcher()
    batcher.tick(jobs=[(job("a"), loaded)], cancels=set(), credits={})
    (lane,) = batcher.shared.values()
    cache = lane.decoder.stepper.cache
    assert cache.capacity_rows >= SHARED_LANE_ROWS  # room for a class, allocated before the first step
    buffers = [k.data_ptr() for k in cache.self_k]
    run(batcher)
    assert not batcher.in_flight and list(batcher.shared.values()) == [lane]  # finished, the lane stays
    second = [(job(f"c{i}"), loaded) for i in range(SHARED_LANE_ROWS)]
    out = frames(batcher.tick(jobs=second, cancels=set(), credits={})) + run(batcher)
    assert sum(f["type"] == "done" for f in out) == SHARED_LANE_ROWS
    assert [k.data_ptr() for k in cache.self_k] == buffers  # a whole class joined without re-allocating
    later = time.monotonic() + batcher_module.SHARED_LANE_IDLE_S + 1
    batcher._drop_empty_lanes(later)
    assert batcher.shared == {}
