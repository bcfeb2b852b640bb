"""Fuzzed frames on `/ws/decode/`: each gets an error frame, none closes the socket or reaches a worker."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fixtures.playground import SOURCE
from tests.fixtures.sockets import socket_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]

VALID = {"type": "decode", "model": "tiny", "source": SOURCE}
NUMBERS = ("max_len", "min_len", "beam_size", "n_best", "length_penalty", "temperature", "top_k", "top_p", "seed",
           "top_alternatives", "pace_ms")
FLAGS = ("early_stop", "attention", "step_mode", "compare_cache")
KNOWN = {"type", "model", "source", "strategy", "tag", *NUMBERS, *FLAGS}

odd_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | odd_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(odd_text, inner, max_size=3),
    max_leaves=10,
)
not_text = st.none() | st.booleans() | st.integers() | st.lists(st.integers(), max_size=2) | st.dictionaries(
    odd_text, st.integers(), max_size=2)
not_a_number = not_text.filter(lambda v: not isinstance(v, int) or isinstance(v, bool)) | odd_text
out_of_range = st.one_of(st.integers(max_value=-1), st.integers(min_value=2**64), st.just(float("inf")),
                         st.just(float("nan")))

broken_decodes = st.one_of(
    st.tuples(st.sampled_from(NUMBERS), not_a_number | out_of_range),
    st.tuples(st.sampled_from(FLAGS), st.none() | st.integers() | odd_text | st.lists(st.booleans(), max_size=2)),
    st.tuples(st.just("strategy"), odd_text.filter(lambda s: s not in ("greedy", "beam", "sample")) | not_text),
    st.tuples(st.just("model"), odd_text.filter(lambda s: s != "tiny") | not_text),
    # longer than PLAYGROUND_MAX_SOURCE_CHARS (200), in any script, surrogates included
    st.tuples(st.just("source"), st.text(st.characters(codec=None), min_size=201, max_size=3000) | not_text),
    st.tuples(odd_text.filter(lambda k: k not in KNOWN), json_value),
).map(lambda change: json.dumps({**VALID, change[0]: change[1]}))

frames = st.one_of(
    broken_decodes,
    st.dictionaries(odd_text, json_value, max_size=4).map(json.dumps),  # objects without a known type
    st.fixed_dictionaries({"type": st.sampled_from(["cancel", "step"])}, optional={"request_id": json_value})
    .map(json.dumps),  # nothing runs on this socket: nothing to cancel or step
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=200),  # mostly not JSON
    st.builds(lambda n: json.dumps({**VALID, "source": "好" * n}), st.integers(70_000, 100_000)),  # too large
)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(frame=frames)
def test_fuzzed_frames_get_an_error_and_the_socket_stays_open(tiny, student, frame):
    from asgiref.sync import async_to_sync

    async def exchange() -> None:
        ws = await socket_for("/ws/decode/", student)
        assert (await ws.connect())[0]
        await ws.send_to(text_data=frame)
        reply = json.loads(await ws.receive_from(timeout=10))
        assert reply["type"] == "error" and reply["code"] and reply["message"], reply
        await ws.send_json_to({"type": "cancel"})  # still open, still answering, and nothing was started
        assert (await ws.receive_json_from(timeout=10))["code"] == "not_running"
        assert await ws.receive_nothing(timeout=0.05)
        await ws.disconnect()

    async_to_sync(exchange)()
