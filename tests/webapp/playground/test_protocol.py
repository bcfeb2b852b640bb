"""What a `decode` frame may hold: the socket refuses the rest with a code a client can act on."""
from __future__ import annotations

import json

import pytest

from webapp.playground.protocol import Limits, ProtocolError, parse_decode, parse_target, state_text

LIMITS = Limits(max_source_chars=50, max_tokens=40)
GOOD = {"type": "decode", "model": "zh-en-post", "source": "我们看见我的猫。"}


def refused(frame: dict) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        parse_decode(frame, LIMITS)
    return caught.value


def test_a_plain_frame_decodes_greedily_without_attention():
    request = parse_decode(GOOD, LIMITS)
    assert request.model == "zh-en-post" and request.source == "我们看见我的猫。"
    assert request.params == {"strategy": "greedy", "capture_attention": False}
    assert (request.pace_ms, request.step_mode, request.compare_cache, request.tag) == (0, False, False, None)


def test_stream_options_and_search_parameters_are_kept_apart():
    request = parse_decode({**GOOD, "strategy": "beam", "beam_size": 3, "n_best": 2, "attention": True,
                            "pace_ms": 250, "step_mode": True, "compare_cache": True, "tag": "t1"}, LIMITS)
    assert request.params == {"strategy": "beam", "beam_size": 3, "n_best": 2, "capture_attention": True}
    assert (request.pace_ms, request.step_mode, request.compare_cache, request.tag) == (250, True, True, "t1")


@pytest.mark.parametrize(
    ("change", "code", "words"),
    [
        ({"model": 7}, "bad_params", "model"),
        ({"source": ["a"]}, "bad_params", "source"),
        ({"source": "   "}, "empty_source", "empty"),
        ({"source": "好" * 51}, "source_too_long", "at most 50"),
        ({"source": "a\ud800b"}, "bad_params", "Unicode"),
        ({"strategy": "telepathy"}, "bad_params", "strategy"),
        ({"max_len": 41}, "bad_params", "max_len"),
        ({"beam_size": True}, "bad_params", "beam_size"),
        ({"temperature": 0}, "bad_params", "temperature"),
        ({"top_p": float("nan")}, "bad_params", "top_p"),
        ({"seed": -1}, "bad_params", "seed"),
        ({"seed": None}, "bad_params", "seed"),
        ({"max_len": None}, "bad_params", "max_len"),
        ({"pace_ms": 99_999}, "bad_params", "pace_ms"),
        ({"step_mode": "yes"}, "bad_params", "step_mode"),
        ({"n_best": 2}, "bad_params", "beam"),
        ({"min_len": 9, "max_len": 3}, "bad_params", "min_len"),
        ({"tag": "x" * 65}, "bad_params", "tag"),
        ({"forced_prefix": [5]}, "bad_params", "unknown field"),
    ],
)
def test_each_bad_field_is_named_in_the_refusal(change, code, words):
    error = refused({**GOOD, **change})
    assert error.code == code
    assert words in error.message


def test_a_cancel_or_step_names_one_request_or_all():
    assert parse_target({"type": "cancel"}) is None
    assert parse_target({"type": "step", "request_id": "abc"}) == "abc"
    with pytest.raises(ProtocolError):
        parse_target({"type": "cancel", "request_id": 12})


@pytest.mark.parametrize("change", [{"min_len": 9, "max_len": 3}, {"strategy": "beam", "beam_size": 2, "n_best": 3},
                                    {"temperature": -1}, {"early_stop": "no"}])
def test_the_search_fields_are_refused_with_the_decoding_engines_own_words(change):
    from modelcore.decoding.params import DecodeError, DecodeParams

    with pytest.raises(DecodeError) as engine:
        DecodeParams.from_dict({"strategy": "greedy", **change})
    error = refused({**GOOD, **change})
    assert (error.code, error.message) == ("bad_params", str(engine.value))


def test_the_playgrounds_caps_are_tighter_than_the_engines():
    assert "at most 8" in refused({**GOOD, "strategy": "beam", "beam_size": 9}).message
    assert "at most 40" in refused({**GOOD, "min_len": 41}).message
    assert parse_decode({**GOOD, "strategy": "beam", "beam_size": 8}, LIMITS).params["beam_size"] == 8


def test_a_state_frame_holds_each_frame_text_as_it_was_sent_in_order():
    texts = ['{"type":"start","request_id":"r"}', '{"type": "token", "seq": 0, "token": "猫"}', '{"type":"done"}']
    text = state_text('r"1', texts)
    assert json.loads(text) == {"type": "state", "request_id": 'r"1', "frames": [json.loads(t) for t in texts]}
    assert all(t in text for t in texts)  # not parsed and written again: each keeps its own spacing
    assert json.loads(state_text("r", [])) == {"type": "state", "request_id": "r", "frames": []}
