"""Decode jobs reach the workers' queue with their limits checked, a burst in a few Celery messages."""
from __future__ import annotations

import asyncio
import base64
import json

import pytest
from channels.db import database_sync_to_async

from tests.fixtures.playground import SOURCE, connected, receive
from webapp.ops.redis_client import app_redis
from webapp.playground.handoff import handoff
from webapp.playground.protocol import parse_decode
from webapp.playground.services import decode_queue, new_job, playground_limits

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]

QUEUE = "interactive"  # the Redis list Celery's broker keeps the queue's messages in


def job_for(user_id: int) -> dict:
    request = parse_decode({"type": "decode", "model": "tiny", "source": SOURCE}, playground_limits())
    return new_job(user_id=user_id, reply_channel="specific.test", request=request,
                   model={"name": "tiny", "path": "/nowhere", "hash": ""})


def queued_messages(since: int) -> list[list[str]]:
    """Request ids carried by each Celery message pushed onto the queue after it held `since` messages."""
    client = app_redis()
    new = client.llen(QUEUE) - since
    raw = client.lrange(QUEUE, 0, new - 1) if new > 0 else []  # the broker pushes new messages at the head
    carried = []
    for message in reversed(raw):
        args, _, _ = json.loads(base64.b64decode(json.loads(message)["body"]))
        carried.append([job["request_id"] for job in args[0]])
    return carried


@pytest.fixture
def empty_queue(redis_server):
    app_redis().delete(QUEUE)
    yield
    app_redis().delete(QUEUE)


def test_one_call_checks_every_limit_and_queues_the_admitted_jobs_in_one_message(student, settings, empty_queue,
                                                                               present_worker):
    settings.PLAYGROUND_MAX_CONCURRENT = 2
    jobs = [job_for(student.id) for _ in range(3)]
    verdicts = decode_queue(jobs)
    assert verdicts[:2] == [None, None]
    assert verdicts[2] is not None and verdicts[2].code == "too_many_decodes"
    assert queued_messages(0) == [[jobs[0]["request_id"], jobs[1]["request_id"]]]


async def test_a_burst_of_requests_leaves_in_fewer_messages_than_requests(student, settings, empty_queue,
                                                                        present_worker):
    settings.PLAYGROUND_MAX_CONCURRENT = 100
    jobs = [job_for(student.id) for _ in range(24)]
    verdicts = await asyncio.gather(*(handoff().send(job) for job in jobs))
    assert verdicts == [None] * 24
    carried = await database_sync_to_async(queued_messages)(0)
    assert sorted(rid for message in carried for rid in message) == sorted(job["request_id"] for job in jobs)
    assert len(carried) <= 2  # the first may leave alone; the rest waited for it and share one message


async def test_an_unreachable_redis_gets_an_unavailable_error_and_the_socket_stays_open(tiny, student, settings):
    ws = await connected(student)
    settings.REDIS_URL = "redis://127.0.0.1:9/0"  # nothing listens on the discard port
    await ws.send_json_to({"type": "decode", "model": "tiny", "source": SOURCE, "tag": "t1"})
    refusal = await receive(ws)
    assert (refusal["type"], refusal["code"], refusal["tag"]) == ("error", "unavailable", "t1")
    await ws.send_json_to({"type": "nonsense"})
    assert (await receive(ws))["code"] == "unknown_type"  # still open and answering
    await ws.disconnect()
