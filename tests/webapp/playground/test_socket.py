"""`/ws/decode/` against a real Celery worker process and a real Redis."""
from __future__ import annotations

import asyncio
import json

import pytest
from channels.db import database_sync_to_async

from tests.fixtures.attention import step_attention
from tests.fixtures.playground import SOURCE, connected, nothing_arrives, receive, until_final
from tests.fixtures.waiting import wait_until_async
from webapp.ops.redis_client import app_redis
from webapp.playground import keys

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]

LONG = {"min_len": 60, "max_len": 60}  # a random model would often stop at once; these run 60 steps


def tokens_of(frames):
    return [f for f in frames if f["type"] == "token"]


async def ended(request_id: str, timeout: float = 5) -> dict:
    """What the worker recorded when the request ended (it writes this only once it has stopped)."""
    key = keys.ended_key(request_id)
    raw = await wait_until_async(lambda: database_sync_to_async(app_redis().get)(key), f"the worker ended {request_id}",
                                 timeout=timeout)
    return json.loads(raw)


async def test_anonymous_visitors_and_foreign_pages_cannot_open_the_socket(student):
    from tests.fixtures.sockets import socket_for

    anonymous = await socket_for("/ws/decode/")
    assert not (await anonymous.connect())[0]
    foreign = await socket_for("/ws/decode/", student, origin=(b"origin", b"http://evil.example"))
    assert not (await foreign.connect())[0]


async def test_a_decode_streams_start_then_one_token_per_step_then_done(worker, tiny, student):
    ws = await connected(student)
    await ws.send_json_to({"type": "decode", "model": "tiny", "source": SOURCE, "min_len": 7, "max_len": 7,
                           "attention": True, "tag": "first"})
    frames = await until_final(ws)
    start, *steps, done = frames
    assert start["type"] == "start" and start["tag"] == "first"
    assert start["src_tokens"] == [*SOURCE.split(), "<eos>"]  # the model reads its source up to <eos>
    assert [f["type"] for f in steps] == ["token"] * 7
    assert [f["seq"] for f in steps] == list(range(7))
    assert {f["request_id"] for f in frames} == {start["request_id"]}
    _, cross = step_attention(steps[3]["attention"])  # the last layer, the heads' mean (the default view)
    assert len(cross) == 6 and abs(sum(cross) - 1) < 6 / 255  # one weight per source token and <eos>
    assert done["type"] == "done" and done["steps"] == 7 and done["reason"] == "max_len"
    assert done["text"] == steps[-1]["text"] == " ".join(f["token"] for f in steps)
    await ws.disconnect()


async def test_two_users_decoding_at_once_get_only_their_own_gapless_frames(worker, tiny, student, django_user_model):
    other = await database_sync_to_async(django_user_model.objects.create_user)("stu2", password="x")
    first, second = await connected(student), await connected(other)
    await asyncio.gather(
        first.send_json_to({"type": "decode", "model": "tiny", "source": "1 8 6 j", **LONG}),
        second.send_json_to({"type": "decode", "model": "tiny", "source": "a b c d e f g", **LONG}),
    )
    mine, theirs = await asyncio.gather(until_final(first), until_final(second))
    for frames, source in ((mine, "1 8 6 j"), (theirs, "a b c d e f g")):
        assert frames[0]["src_tokens"] == [*source.split(), "<eos>"]
        assert {f["request_id"] for f in frames} == {frames[0]["request_id"]}
        assert [f["seq"] for f in tokens_of(frames)] == list(range(60))
        assert frames[-1]["type"] == "done"
    assert mine[0]["request_id"] != theirs[0]["request_id"]
    await first.disconnect()
    await second.disconnect()


async def test_cancel_stops_the_worker_within_a_step(worker, tiny, student):
    ws = await connected(student)
    await ws.send_json_to({"type": "decode", "model": "tiny", "source": SOURCE, "pace_ms": 150, **LONG})
    start = await receive(ws)
    assert (await receive(ws))["seq"] == 0
    await ws.send_json_to({"type": "cancel"})
    after = await until_final(ws)
    assert len(tokens_of(after)) <= 1  # at most the step already under way
    assert after[-1]["type"] == "done" and after[-1]["reason"] == "cancelled"
    assert (await ended(start["request_id"]))["reason"] == "cancelled"
    await ws.disconnect()


async def test_a_client_that_leaves_mid_decode_stops_the_worker(worker, tiny, student):
    ws = await connected(student)
    await ws.send_json_to({"type": "decode", "model": "tiny", "source": SOURCE, "pace_ms": 150, **LONG})
    start = await receive(ws)
    await receive(ws)
    await ws.disconnect()
    record = await ended(start["request_id"])  # 60 paced steps would take 9 s
    assert record["reason"] == "cancelled" and record["steps"] < 10


async def test_step_mode_gives_exactly_one_token_per_step(worker, tiny, student):
    ws = await connected(student)
    await ws.send_json_to({"type": "decode", "model": "tiny", "source": SOURCE, "step_mode": True, **LONG})
    start = await receive(ws)
    assert start["type"] == "start" and start["step_mode"] is True
    assert await nothing_arrives(ws, 0.5)
    for seq in range(3):
        await ws.send_json_to({"type": "step"})
        token = await receive(ws)
        assert (token["type"], token["seq"]) == ("token", seq)
        assert await nothing_arrives(ws, 0.4)
    await ws.send_json_to({"type": "cancel"})
    assert (await until_final(ws))[-1]["reason"] == "cancelled"
    await ws.disconnect()


async def test_a_user_over_the_concurrent_limit_gets_an_error_and_keeps_the_socket(worker, tiny, student, settings):
    settings.PLAYGROUND_MAX_CONCURRENT = 2
    ws = await connected(student)
    for _ in range(2):
        await ws.send_json_to({"type": "decode", "model": "tiny", "source": SOURCE, "step_mode": True})
        assert (await receive(ws))["type"] == "start"
    await ws.send_json_to({"type": "decode", "model": "tiny", "source": SOURCE, "tag": "third"})
    refusal = await receive(ws)
    assert (refusal["type"], refusal["code"], refusal["tag"]) == ("error", "too_many_decodes", "third")
    await ws.send_json_to({"type": "cancel"})
    finals = [await receive(ws), await receive(ws)]
    assert [f["reason"] for f in finals] == ["cancelled", "cancelled"]
    await ws.send_json_to({"type": "decode", "model": "tiny", "source": SOURCE, "max_len": 3, "min_len": 3})
    assert (await until_final(ws))[-1]["type"] == "done"  # the slots are free again
    await ws.disconnect()


async def test_a_user_over_the_rate_limit_gets_an_error(worker, tiny, student, settings):
    settings.PLAYGROUND_REQUESTS_PER_MINUTE = 2
    ws = await connected(student)
    for _ in range(2):
        await ws.send_json_to({"type": "decode", "model": "tiny", "source": SOURCE, "max_len": 2, "min_len": 2})
        assert (await until_final(ws))[-1]["type"] == "done"
    await ws.send_json_to({"type": "decode", "model": "tiny", "source": SOURCE})
    refusal = await receive(ws)
    assert (refusal["type"], refusal["code"]) == ("error", "rate_limited")
    assert "try again in" in refusal["message"]
    await ws.disconnect()


async def test_a_student_cannot_decode_an_unpublished_model_but_an_admin_can(worker, tiny, student, admin):
    tiny.published = False
    await database_sync_to_async(tiny.save)()
    ws = await connected(student)
    await ws.send_json_to({"type": "decode", "model": "tiny", "source": SOURCE})
    refusal = await receive(ws)
    assert (refusal["type"], refusal["code"]) == ("error", "unknown_model")
    await ws.disconnect()
    ws = await connected(admin)
    await ws.send_json_to({"type": "decode", "model": "tiny", "source": SOURCE, "max_len": 2, "min_len": 2})
    assert (await until_final(ws))[-1]["type"] == "done"
    await ws.disconnect()
