"""A lesson training run that fails tells the class why, without the server's file system."""
from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from modelcore.lesson import training
from tests.fixtures.sockets import socket_for
from webapp.lesson.models import TrainingRun
from webapp.lesson.services import training_execute

pytestmark = pytest.mark.django_db(transaction=True)
STORE = "/srv/encdec/lesson-cache/mask/"


def _broken(params, on_progress):
    raise FileNotFoundError(f"No such file or directory: '{STORE}batch-0.pt'")


async def test_a_failed_run_reaches_the_socket_and_the_page_without_server_paths(client_as, student, monkeypatch):
    monkeypatch.setitem(training.TRAININGS, "mask", _broken)
    run = await database_sync_to_async(TrainingRun.objects.create)(key="train-mask-failing", kind="mask", params={},
                                                                  owner=student)
    ws = await socket_for(f"/ws/lesson/runs/{run.pk}/", student)
    assert (await ws.connect())[0]
    assert (await ws.receive_json_from(timeout=10))["status"] == "queued"
    await sync_to_async(training_execute)(run_id=run.pk)
    frames = [await ws.receive_json_from(timeout=10)]
    while frames[-1]["type"] != "failed":
        frames.append(await ws.receive_json_from(timeout=10))
    await ws.disconnect()
    message = frames[-1]["message"]
    assert "batch-0.pt" in message and "/srv" not in message and "lesson-cache" not in message

    again = await socket_for(f"/ws/lesson/runs/{run.pk}/", student)  # a student who opens it later
    assert (await again.connect())[0]
    state = await again.receive_json_from(timeout=10)
    await again.disconnect()
    assert state["status"] == "failed" and "batch-0.pt" in state["error"] and "/srv" not in state["error"]

    client = await sync_to_async(client_as)(student)
    page = (await sync_to_async(client.get)(f"/lesson/runs/{run.pk}/")).content.decode()
    assert "batch-0.pt" in page and "/srv" not in page and "lesson-cache" not in page
