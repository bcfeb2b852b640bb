"""Compact attention: the frames carry one view at 8 bits per weight, and read back within the quantization step."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from modelcore.decoding import DecodeParams, StartEvent, TokenEvent, decode_stream
from tests.fixtures.attention import encoder_attention, step_attention
from tests.fixtures.worker import SOURCE, worker_job
from webapp.playground import attention
from webapp.playground.attention import SCALE, View
from webapp.playground.worker import frames as frames_module
from webapp.playground.worker.batcher import Batcher

HALF_STEP = 0.5 / SCALE + 1e-6
ATTENTION = {"strategy": "greedy", "min_len": 6, "max_len": 6, "capture_attention": True}


def outs(tick, request_id=None):
    return [json.loads(o.text) for o in tick.out if request_id in (None, o.request_id)]


def run(batcher, **control):
    out = []
    for _ in range(100):
        if not batcher.in_flight:
            break
        out += outs(batcher.tick(jobs=[], cancels=set(), credits={}, **control))
    return out


def engine_weights(loaded):
    """The model's own float weights for SOURCE, as modelcore's decoder computes them."""
    src_ids = loaded.src_tokenizer.source_ids(SOURCE, loaded.config.max_len)
    events = list(decode_stream(loaded, src_ids, DecodeParams.from_dict(ATTENTION)))
    start = next(e for e in events if isinstance(e, StartEvent))
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    return start.encoder_attention.numpy(), [(t.self_attention.numpy(), t.cross_attention.numpy()) for t in tokens]


def pick(weights, layer, head):
    return weights[layer].mean(axis=0) if head is None else weights[layer][head]


@pytest.mark.parametrize("view", [View(), View(layer=0, encoder_layer=1, head=1), View(layer=1, encoder_layer=0, head=None)])
def test_frames_carry_the_asked_view_within_half_a_quantization_step(loaded, view):
    encoder, steps = engine_weights(loaded)
    batcher = Batcher()
    job = worker_job("a", ATTENTION, view=view.to_dict())
    out = outs(batcher.tick(jobs=[(job, loaded)], cancels=set(), credits={})) + run(batcher)
    start, tokens = out[0], [f for f in out if f["type"] == "token"]
    shown = view.for_model(loaded.config.n_decoder_layers, loaded.config.n_encoder_layers, loaded.config.n_heads)
    assert start["attention_view"] == shown.to_dict()
    assert start["encoder_attention"]["scale"] == SCALE
    got = np.array(encoder_attention(start["encoder_attention"]))
    assert np.abs(got - pick(encoder, shown.encoder_layer, shown.head)).max() <= HALF_STEP
    assert len(tokens) == len(steps) == 6
    for k, (frame, (self_rows, cross_rows)) in enumerate(zip(tokens, steps, strict=True)):
        got_self, got_cross = step_attention(frame["attention"])
        assert len(got_self) == k + 1  # <bos> and the k tokens before this step
        assert np.abs(np.array(got_self) - pick(self_rows, shown.layer, shown.head)).max() <= HALF_STEP
        assert np.abs(np.array(got_cross) - pick(cross_rows, shown.layer, shown.head)).max() <= HALF_STEP


def test_the_weights_cost_what_docs_protocol_md_says_whatever_the_layers_and_heads(loaded):
    batcher = Batcher()
    out = outs(batcher.tick(jobs=[(worker_job("a", ATTENTION), loaded)], cancels=set(), credits={})) + run(batcher)
    start, tokens = out[0], [f for f in out if f["type"] == "token"]
    S = len(start["src_ids"])
    assert len(start["encoder_attention"]["weights"]) == 4 * math.ceil(S * S / 3)
    for k, frame in enumerate(tokens):
        assert len(frame["attention"]["self"]) == 4 * math.ceil((k + 1) / 3)
        assert len(frame["attention"]["cross"]) == 4 * math.ceil(S / 3)


def test_switching_the_view_sends_every_step_so_far_then_later_frames_follow_it(loaded):
    encoder, steps = engine_weights(loaded)
    batcher = Batcher()
    out = outs(batcher.tick(jobs=[(worker_job("a", ATTENTION), loaded)], cancels=set(), credits={}))
    out += outs(batcher.tick(jobs=[], cancels=set(), credits={}))
    out += outs(batcher.tick(jobs=[], cancels=set(), credits={}))
    switched = outs(batcher.tick(jobs=[], cancels=set(), credits={}, views={"a": View(layer=0, encoder_layer=0,
                                                                                       head=1)}))
    answer = switched[0]
    assert answer["type"] == "attention" and answer["view"] == {"layer": 0, "encoder_layer": 0, "head": 1}
    assert len(answer["steps"]) == 3  # the three steps already sent; this turn's token follows in the new view
    for got, (self_rows, cross_rows) in zip(answer["steps"], steps, strict=False):
        got_self, got_cross = step_attention(got)
        assert np.abs(np.array(got_cross) - cross_rows[0][1]).max() <= HALF_STEP
        assert np.abs(np.array(got_self) - self_rows[0][1]).max() <= HALF_STEP
    enc = np.array(encoder_attention(answer["encoder_attention"]))
    assert np.abs(enc - encoder[0][1]).max() <= HALF_STEP
    later = [f for f in switched[1:] + run(batcher) if f["type"] == "token"]
    assert later and all((f["attention"]["layer"], f["attention"]["head"]) == (0, 1) for f in later)


def test_an_ended_requests_copy_answers_any_view_within_one_step(loaded):
    encoder, steps = engine_weights(loaded)
    batcher = Batcher()
    batcher.tick(jobs=[(worker_job("a", ATTENTION), loaded)], cancels=set(), credits={})
    ended = []
    for _ in range(20):
        ended += batcher.tick(jobs=[], cancels=set(), credits={}).ended
    (copy,) = [e.attention for e in ended]
    frame = attention.attention_frame_of_packed("a", copy.packed(), View(layer=1, encoder_layer=1, head=None))
    assert frame["view"] == {"layer": 1, "encoder_layer": 1, "head": "mean"} and len(frame["steps"]) == 6
    for got, (self_rows, cross_rows) in zip(frame["steps"], steps, strict=True):
        got_self, got_cross = step_attention(got)
        assert np.abs(np.array(got_self) - self_rows[1].mean(axis=0)).max() <= 1 / SCALE + 1e-6
        assert np.abs(np.array(got_cross) - cross_rows[1].mean(axis=0)).max() <= 1 / SCALE + 1e-6
    enc = np.array(encoder_attention(frame["encoder_attention"]))
    assert np.abs(enc - encoder[1].mean(axis=0)).max() <= 1 / SCALE + 1e-6


def test_beam_frames_carry_each_beams_rows_and_a_view_answer_keeps_them_per_beam(loaded):
    beam = {"strategy": "beam", "beam_size": 3, "min_len": 4, "max_len": 4, "capture_attention": True}
    batcher = Batcher()
    out = outs(batcher.tick(jobs=[(worker_job("b", beam), loaded)], cancels=set(), credits={}))
    out += outs(batcher.tick(jobs=[], cancels=set(), credits={}))
    out += outs(batcher.tick(jobs=[], cancels=set(), credits={}, views={"b": View(head=0)}))
    steps = [f for f in out if f["type"] == "beams"]
    answer = next(f for f in out if f["type"] == "attention")
    assert len(answer["steps"]) == 2 and [len(s) for s in answer["steps"]] == [len(s["beams"]) for s in steps[:2]]
    assert all(b["attention"]["head"] == 0 for b in steps[-1]["beams"])


def test_a_frame_that_would_not_fit_a_message_ends_its_request_with_an_error(loaded, monkeypatch):
    monkeypatch.setattr(frames_module, "MAX_FRAME_BYTES", 200)  # a start frame is more than this
    batcher = Batcher()
    tick = batcher.tick(jobs=[(worker_job("big", ATTENTION), loaded)], cancels=set(), credits={})
    (error,) = outs(tick)
    assert (error["type"], error["code"], error["request_id"]) == ("error", "frame_too_large", "big")
    assert "200" in error["message"] and not batcher.in_flight
    assert [e.reason for e in tick.ended] == ["error"]


@pytest.mark.slow
@pytest.mark.parametrize("search", [{"strategy": "greedy", "top_alternatives": 10},
                                    {"strategy": "beam", "beam_size": 8, "n_best": 8, "early_stop": False}])
def test_the_largest_request_allowed_streams_frames_well_under_the_message_limit(search):
    """200 characters (201 source tokens), 128 steps, every view switched once mid-way: docs/protocol.md's bound."""
    from modelcore.checkpoint import load_model
    from webapp.playground.worker.loop import _state_text

    loaded = load_model("zh-en-post")
    params = {**search, "min_len": 128, "max_len": 128, "capture_attention": True}
    job = worker_job("big", params, source=("昨天我在花园里画了三条大鱼。" * 15)[:200],
                     model={"name": "zh-en-post", "path": str(loaded.path), "hash": ""})
    batcher = Batcher()
    sent = list(batcher.tick(jobs=[(job, loaded)], cancels=set(), credits={}).out)
    while batcher.in_flight:
        switch = {"big": View(layer=0, head=1)} if len(sent) == 120 else None
        sent += batcher.tick(jobs=[], cancels=set(), credits={}, views=switch).out
    kinds = [json.loads(out.text)["type"] for out in sent]
    assert kinds.count("attention") == 1 and kinds[-1] == "done" and "error" not in kinds
    assert max(len(out.text.encode()) for out in sent) < frames_module.MAX_FRAME_BYTES * 0.6
    state = _state_text("big", [out for out in sent if out.kept])
    assert json.loads(state)["type"] == "state" and len(state.encode()) < frames_module.MAX_FRAME_BYTES * 0.7
