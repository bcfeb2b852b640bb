"""One request never breaks a lane for the others: any accepted parameters, a request that fails, a step that fails."""
from __future__ import annotations

import json

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from modelcore.decoding import BatchDecoder
from modelcore.decoding.steppers import CachedStepper
from tests.fixtures.models import make_model_folder
from tests.fixtures.worker import GREEDY, SOURCE, worker_job
from webapp.playground.protocol import MAX_ALTERNATIVES, MAX_BEAMS, Limits, ProtocolError, parse_decode
from webapp.playground.worker.batcher import Batcher, Tick
from webapp.playground.worker.lanes import Job, Lane

LIMITS = Limits(max_source_chars=200, max_tokens=12)


def job(request_id: str, params: dict, **changes) -> Job:
    return worker_job(request_id, params, max_tokens=LIMITS.max_tokens, **changes)


def last_frames(batcher: Batcher, first: Tick, turns: int = 100) -> dict[str, dict]:
    """Run the batch until nothing is in flight; the final frame of each request."""
    out = list(first.out)
    for _ in range(turns):
        if not batcher.in_flight:
            break
        out += batcher.tick(jobs=[], cancels=set(), credits={}).out
    return {o.request_id: json.loads(o.text) for o in out if o.final}


# Every value the socket accepts, the extremes included (a temperature or top_p of 1e-300 once
# turned a shared lane's probabilities into NaN and every later request on it into an error).
tiny_positive = st.sampled_from([5e-324, 1e-300, 1e-45, 1e-8])
accepted = st.fixed_dictionaries(
    {"strategy": st.sampled_from(["greedy", "beam", "sample"])},
    optional={
        "temperature": tiny_positive | st.floats(min_value=0.0, max_value=10.0, exclude_min=True),
        "top_p": tiny_positive | st.floats(min_value=0.0, max_value=1.0, exclude_min=True),
        "top_k": st.integers(0, 100_000),
        "beam_size": st.integers(1, MAX_BEAMS),
        "length_penalty": st.floats(0.0, 10.0),
        "early_stop": st.booleans(),
        "max_len": st.integers(1, LIMITS.max_tokens),
        "min_len": st.integers(0, LIMITS.max_tokens),
        "seed": st.integers(0, 2**63 - 1),
        "top_alternatives": st.integers(0, MAX_ALTERNATIVES),
        "attention": st.booleans(),
        "compare_cache": st.booleans(),
    },
)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(frame=accepted)
@example(frame={"strategy": "sample", "temperature": 1e-300, "max_len": 6})
@example(frame={"strategy": "sample", "top_p": 1e-300, "max_len": 6})
@example(frame={"strategy": "sample", "temperature": 5e-324, "top_p": 5e-324, "top_k": 1, "max_len": 6})
def test_any_accepted_request_beside_a_greedy_one_leaves_it_and_the_next_one_whole(loaded, frame):
    try:
        request = parse_decode({"type": "decode", "model": "tiny", "source": SOURCE, **frame}, LIMITS)
    except ProtocolError:  # refused at the socket (e.g. min_len over max_len): never reaches a worker
        return
    batcher = Batcher()
    odd = job("odd", request.params, compare_cache=request.compare_cache)
    first = batcher.tick(jobs=[(odd, loaded), (job("greedy", GREEDY), loaded)], cancels=set(), credits={})
    ended = last_frames(batcher, first)
    assert ended["greedy"]["type"] == "done" and ended["greedy"]["steps"] == 6
    assert ended["odd"]["type"] == "done", ended["odd"]  # accepted values are computable, every one
    later = batcher.tick(jobs=[(job("later", GREEDY), loaded)], cancels=set(), credits={})
    assert last_frames(batcher, later)["later"]["type"] == "done"


def test_a_request_whose_own_step_fails_ends_alone_and_the_lane_serves_on(tmp_path):
    """A model whose weights went NaN in one output column: sampling cannot draw, greedy still can."""
    from modelcore.checkpoint import load_model

    diverged = load_model(make_model_folder(tmp_path / "diverged"))
    with torch.no_grad():
        diverged.model.generator.bias[7] = float("nan")
    batcher = Batcher()
    sampling = {"strategy": "sample", "min_len": 6, "max_len": 6}
    first = batcher.tick(jobs=[(job("greedy", GREEDY), diverged), (job("sample", sampling), diverged)],
                         cancels=set(), credits={})
    ended = last_frames(batcher, first)
    assert ended["sample"]["type"] == "error" and ended["sample"]["code"] == "internal"
    assert ended["greedy"]["type"] == "done" and ended["greedy"]["steps"] == 6
    later = batcher.tick(jobs=[(job("later", GREEDY), diverged)], cancels=set(), credits={})
    assert last_frames(batcher, later)["later"]["type"] == "done"


class FaultyStepper(CachedStepper):
    """A Stepper whose batched forward fails, as on a device fault; sources are added as the real one adds them."""

    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("device fault")


def test_a_failed_batched_step_ends_that_step_and_the_next_request_decodes(loaded):
    """The batched forward itself fails (as on a device fault): its requests end, the lane starts over."""
    batcher = Batcher()
    lane = Lane(loaded, shared=True)  # the model's shared lane, its decoder on the faulty stepper
    lane.decoder = BatchDecoder(loaded.model, src_tokenizer=loaded.src_tokenizer, tgt_tokenizer=loaded.tgt_tokenizer,
                                stepper=FaultyStepper(loaded.model))
    batcher.shared[(str(loaded.path), loaded.checkpoint_hash)] = lane
    first = batcher.tick(jobs=[(job("a", GREEDY), loaded), (job("b", GREEDY), loaded)], cancels=set(), credits={})
    assert next(iter(batcher.shared.values())) is lane
    ended = last_frames(batcher, first)
    assert {rid: f["type"] for rid, f in ended.items()} == {"a": "error", "b": "error"}
    later = batcher.tick(jobs=[(job("later", GREEDY), loaded)], cancels=set(), credits={})
    assert last_frames(batcher, later)["later"]["type"] == "done"
