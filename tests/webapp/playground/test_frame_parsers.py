"""Property tests of the socket frame parsers: any JSON value in any field is an answer in words, never a crash.

A parser either returns a checked request or raises the error its socket turns into an `error` frame
(ProtocolError, ClassroomError); anything else (OverflowError, TypeError...) would close the socket
with 1011 and log a traceback.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webapp.classroom import questions
from webapp.classroom.errors import ClassroomError
from webapp.classroom.frames import RUN_KEYS, parse_run
from webapp.classroom.services import parse_views
from webapp.playground.protocol import (
    PARAM_KEYS,
    Limits,
    ProtocolError,
    parse_decode,
    parse_target,
    parse_view,
)

LIMITS = Limits(max_source_chars=200, max_tokens=64)
HUGE = 10**400  # a 401-digit integer: valid JSON, past a float's range

text = st.text(st.characters(codec=None, exclude_categories=()), max_size=20)
number = st.integers() | st.integers(min_value=-(10**40), max_value=10**40) | st.floats()
extreme = st.sampled_from([HUGE, -HUGE, 2**63, 2**64, float("inf"), float("-inf"), float("nan"), 1e308, 5e-324])
json_value = st.recursive(
    st.none() | st.booleans() | number | extreme | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
DECODE_KEYS = (*PARAM_KEYS, "attention", "view", "pace_ms", "step_mode", "compare_cache", "tag", "model", "source")


def fields(keys: tuple[str, ...]) -> st.SearchStrategy[dict]:
    """One of these keys (or another) with any JSON value, or several such: a valid frame changed in one place or more."""
    value = json_value | number | extreme
    one = st.dictionaries(st.sampled_from(keys), value, min_size=1, max_size=1)
    return one | st.dictionaries(st.sampled_from(keys) | text, value, max_size=6)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(extra=fields(DECODE_KEYS), base=st.booleans())
def test_any_value_in_any_decode_field_is_a_request_or_a_protocol_error(extra, base):
    frame = {"type": "decode", **({"model": "tiny", "source": "abc", "strategy": "sample"} if base else {}), **extra}
    try:
        parse_decode(frame, LIMITS)
    except ProtocolError as error:
        assert error.code in ("bad_params", "source_too_long", "empty_source")
        assert len(error.message) < 400  # a 401-digit number is not echoed whole


@pytest.mark.parametrize("name", ["temperature", "top_p", "length_penalty", "top_k", "seed", "max_len", "beam_size"])
@pytest.mark.parametrize("value", [HUGE, -HUGE])
def test_a_401_digit_number_is_bad_params(name, value):
    with pytest.raises(ProtocolError) as refused:
        parse_decode({"type": "decode", "model": "tiny", "source": "abc", "strategy": "sample", name: value}, LIMITS)
    assert refused.value.code == "bad_params" and name in refused.value.message


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(frame=fields(("request_id", "layer", "encoder_layer", "head", "type")))
def test_any_cancel_step_resync_or_view_frame_is_parsed_or_refused(frame):
    for parse in (parse_target, parse_view):
        try:
            parse(frame)
        except ProtocolError as error:
            assert error.code == "bad_params"


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(extra=fields((*RUN_KEYS, "model")), base=st.booleans())
def test_any_value_in_any_console_run_field_is_a_request_or_an_error(extra, base):
    frame = {"type": "run", **({"source": "abc", "strategy": "sample"} if base else {}), **extra}
    try:
        parse_run(frame, "tiny", {"head": "mean"})
    except (ProtocolError, ClassroomError) as error:
        assert error.code in ("bad_params", "source_too_long", "empty_source")


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(frame=fields(("views", "layer", "encoder_layer", "head", "kind", "prompt", "options", "question", "choice")),
       layers=st.none() | st.integers(1, 6))
def test_any_other_console_or_answer_frame_is_parsed_or_refused(frame, layers):
    for parse in (lambda f: parse_views(f, layers), questions.parse_question,
                  lambda f: questions.question_id_checked(f.get("question"))):
        try:
            parse(frame)
        except ClassroomError as error:
            assert error.code == "bad_params"


@pytest.mark.parametrize("name", ["temperature", "top_p"])
def test_a_401_digit_number_in_a_console_run_is_bad_params(name):
    from webapp.classroom.errors import ClassroomError

    with pytest.raises(ClassroomError) as refused:
        parse_run({"type": "run", "source": "abc", "strategy": "sample", name: HUGE}, "tiny", {"head": "mean"})
    assert refused.value.code == "bad_params"


@pytest.mark.django_db(transaction=True)
async def test_a_401_digit_number_on_the_decode_socket_gets_bad_params_and_the_socket_stays_open(student):
    from tests.fixtures.playground import connected, receive

    ws = await connected(student)
    for name in ("temperature", "top_p", "length_penalty"):
        await ws.send_to(text_data=f'{{"type": "decode", "model": "tiny", "source": "abc", "{name}": {HUGE}}}')
        refused = await receive(ws)
        assert refused["type"] == "error" and refused["code"] == "bad_params" and name in refused["message"]
    await ws.send_to(text_data='{"type": "cancel"}')
    assert (await receive(ws))["code"] == "not_running"  # the same socket, still answering
    await ws.disconnect()
