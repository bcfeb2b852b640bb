"""/ws/experiments/<id>/: the state on connect, live frames, and the same rights as the pages."""
from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from tests.fixtures.sockets import socket_for
from webapp.experiments.models import ExperimentRun
from webapp.experiments.services import run_group
from webapp.realtime.feed import group_frame

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]


@database_sync_to_async
def queued_run() -> ExperimentRun:
    return ExperimentRun.objects.create(kind="gradflow", params={}, params_key="k" * 64)


async def test_an_anonymous_visitor_cannot_watch_a_run():
    run = await queued_run()
    ws = await socket_for(f"/ws/experiments/{run.pk}/")
    connected, _ = await ws.connect()
    assert not connected


async def test_a_student_gets_the_state_then_the_live_frames(student):
    run = await queued_run()
    ws = await socket_for(f"/ws/experiments/{run.pk}/", student)
    connected, _ = await ws.connect()
    assert connected
    state = await ws.receive_json_from()
    assert state["type"] == "state" and state["status"] == "queued" and state["id"] == run.pk
    frame = {"type": "progress", "progress": 0.5, "arm": "pre", "step": 3, "steps": 6, "loss": 2.5}
    await get_channel_layer().group_send(run_group(run.pk), group_frame(frame))
    assert (await ws.receive_json_from(timeout=5)) == frame
    await ws.disconnect()


async def test_an_unknown_run_gets_an_error_frame(student):
    ws = await socket_for("/ws/experiments/424242/", student)
    await ws.connect()
    reply = await ws.receive_json_from()
    assert reply["type"] == "error" and reply["code"] == "not_found"
