"""Continuous batching: requests decoded together get what they get alone, whenever they join or leave."""

from __future__ import annotations

import pytest
import torch

from modelcore import record
from modelcore.decoding import (
    BatchDecoder,
    CachedStepper,
    DecodeParams,
    DoneEvent,
    StartEvent,
    TokenEvent,
    decode,
)
from tests.fixtures.decoding import SRC, done, run, tiny_model

SOURCES = [SRC, [3, 4], [9, 8, 7, 6, 5, 4, 3, 2, 1, 33, 12], [21, 22, 23]]  # lengths differ: padding in play


def alone(model, src, params):  # type: ignore[no-untyped-def]
    events, logits = run(model, [(src, params)], cache=True)
    return done(events)["0"], [e for e in events if isinstance(e, TokenEvent)]


def test_a_batch_equals_the_same_requests_one_at_a_time() -> None:
    model = tiny_model("pre", seed=1)
    params = [DecodeParams(max_len=14), DecodeParams(strategy="beam", beam_size=3, max_len=14),
              DecodeParams(strategy="sample", seed=5, max_len=14), DecodeParams(max_len=4)]
    events, _ = run(model, list(zip(SOURCES, params, strict=True)), cache=True)
    together = done(events)
    for i, (src, p) in enumerate(zip(SOURCES, params, strict=True)):
        single, single_tokens = alone(model, src, p)
        assert together[str(i)].ids == single.ids
        batch_tokens = [e for e in events if isinstance(e, TokenEvent) and e.request_id == str(i)]
        for a, b in zip(batch_tokens, single_tokens, strict=True):
            assert abs(a.prob - b.prob) < 1e-5


def test_each_request_finishes_on_its_own_step() -> None:
    model = tiny_model(seed=1)
    decoder = BatchDecoder(model)
    decoder.add_many([("short", SRC, DecodeParams(max_len=2)), ("long", SRC, DecodeParams(max_len=9, min_len=9))])
    finished_at = {}
    step = 0
    while decoder.active:
        for event in decoder.step():
            if isinstance(event, DoneEvent):
                finished_at[event.request_id] = step
        step += 1
    assert finished_at == {"short": 1, "long": 8}


@pytest.mark.parametrize("step", ["python-matmul", "python-fused", "native"])
def test_a_request_added_to_a_running_batch_gets_the_same_tokens_as_alone(step: str) -> None:
    model = tiny_model("post", "rmsnorm", seed=2)
    late_params = DecodeParams(max_len=12, capture_attention=step != "python-fused")  # fused: nothing captured
    decoder = BatchDecoder(model, stepper=CachedStepper(model, fused_attention=step == "python-fused",
                                                        native=step == "native"))
    decoder.add_many([("a", SOURCES[0], DecodeParams(max_len=20, min_len=20)),
                      ("b", SOURCES[1], DecodeParams(strategy="beam", beam_size=2, max_len=20))])
    events = [e for _ in range(3) for e in decoder.step()]
    decoder.add("late", SOURCES[2], late_params)  # longer source and a 3-step-younger prefix than the rest
    events += list(decoder.run())
    late = [e for e in events if e.request_id == "late"]
    single, single_tokens = alone(model, SOURCES[2], late_params)
    assert done(late)["late"].ids == single.ids
    for a, b in zip([e for e in late if isinstance(e, TokenEvent)], single_tokens, strict=True):
        assert abs(a.prob - b.prob) < 1e-5
        if late_params.capture_attention:
            assert a.self_attention is not None and b.self_attention is not None
            torch.testing.assert_close(a.self_attention, b.self_attention, rtol=0, atol=1e-5)
            torch.testing.assert_close(a.cross_attention, b.cross_attention, rtol=0, atol=1e-5)
    first_alone, _ = alone(model, SOURCES[0], DecodeParams(max_len=20, min_len=20))
    assert done(events)["a"].ids == first_alone.ids  # and the newcomer did not disturb the others


def test_cancelling_a_request_leaves_the_others_untouched() -> None:
    model = tiny_model(seed=3)
    decoder = BatchDecoder(model)
    decoder.add_many([(str(i), src, DecodeParams(max_len=10, min_len=10)) for i, src in enumerate(SOURCES)])
    events = decoder.step() + decoder.step()
    cancelled = decoder.cancel("1")
    assert cancelled.reason == "cancelled" and cancelled.steps == 2 and decoder.active == ["0", "2", "3"]
    events += list(decoder.run())
    assert not [e for e in events[8:] if e.request_id == "1"]  # nothing more from it
    expected = decode(model, SOURCES, DecodeParams(max_len=10, min_len=10))
    assert [done(events)[k].ids for k in ("0", "2", "3")] == [expected[i].ids for i in (0, 2, 3)]


def test_attention_rows_sum_to_one_and_masked_positions_are_exactly_zero() -> None:
    model = tiny_model("pre", seed=4)
    decoder = BatchDecoder(model)
    params = DecodeParams(max_len=6, min_len=6, capture_attention=True)
    starts = decoder.add_many([("long", SOURCES[2], params), ("short", SOURCES[1], params)])
    decoder.step()
    decoder.add("late", SOURCES[3], params)  # rows now hold prefixes of different lengths
    events = [e for e in decoder.step() if isinstance(e, TokenEvent)]
    # Inside the batch, rows span the longest source and prefix: exact zeros where a row has none.
    self_rows, cross_rows = decoder.stepper.attention  # type: ignore[misc]  # rows: long, short, late
    assert (cross_rows[:, 1, :, len(SOURCES[1]) :] == 0).all() and (cross_rows[:, 1, :, : len(SOURCES[1])] > 0).all()
    assert (self_rows[:, 2, :, 1:] == 0).all()  # "late" is one step behind the others
    events += [e for e in decoder.run() if isinstance(e, TokenEvent)]
    L, h = model.config.n_decoder_layers, model.config.n_heads
    for event in events:
        assert event.self_attention is not None and event.cross_attention is not None
        src_len = len(SOURCES[{"long": 2, "short": 1, "late": 3}[event.request_id]])
        assert event.self_attention.shape == (L, h, event.seq + 1)  # <bos> and every token so far
        assert event.cross_attention.shape == (L, h, src_len)
        for rows in (event.self_attention, event.cross_attention):
            torch.testing.assert_close(rows.sum(-1), torch.ones(L, h))
    for start, src in zip(starts, (SOURCES[2], SOURCES[1]), strict=True):
        assert start.encoder_attention is not None and start.encoder_attention.shape == (2, h, len(src), len(src))
        torch.testing.assert_close(start.encoder_attention.sum(-1), torch.ones(2, h, len(src)))


def test_captured_attention_equals_the_models_own_recording() -> None:
    model = tiny_model("post", seed=5)
    params = DecodeParams(max_len=5, capture_attention=True)
    cached_events, _ = run(model, [(SRC, params)], cache=True)
    full_events, _ = run(model, [(SRC, params)], cache=False)  # the model's instrumented full forward
    cached = [e for e in cached_events if isinstance(e, TokenEvent)]
    full = [e for e in full_events if isinstance(e, TokenEvent)]
    with torch.no_grad(), record(model) as recording:
        model.encode(torch.tensor([SRC]), None)
    start = cached_events[0]
    assert isinstance(start, StartEvent) and start.encoder_attention is not None
    torch.testing.assert_close(start.encoder_attention, torch.cat(recording.encoder_self))
    for a, b in zip(cached, full, strict=True):
        torch.testing.assert_close(a.self_attention, b.self_attention, rtol=0, atol=1e-5)
        torch.testing.assert_close(a.cross_attention, b.cross_attention, rtol=0, atol=1e-5)


def test_only_the_requests_that_ask_get_attention_rows() -> None:
    model = tiny_model(seed=6)
    events, _ = run(model, [(SRC, DecodeParams(max_len=3, capture_attention=True)),
                            (SRC, DecodeParams(max_len=3, top_alternatives=2000))], cache=True)
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    assert all((e.self_attention is not None) == (e.request_id == "0") for e in tokens)
    assert all(len(e.alternatives) == model.config.tgt_vocab_size for e in tokens if e.request_id == "1")
