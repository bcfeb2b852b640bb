"""A published tiny model and socket helpers for the playground's tests."""
from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from tests.fixtures.models import make_model_folder
from tests.fixtures.services import WorkerProcess
from tests.fixtures.sockets import socket_for

SOURCE = "3 h 9 5 g"  # a reverse-task source the tiny model's tokenizer knows


@pytest.fixture(autouse=True)
def fresh_limits(redis_server):
    """Each test starts with no recorded requests and no cached model (ids and names repeat between tests)."""
    from webapp.playground import services
    from webapp.playground.keys import PREFIX

    services._models.clear()  # model names repeat from test to test, with other folders
    services._presence[:] = [float("-inf"), 0.0]  # whether a worker is up is read afresh
    client = services.playground_redis()
    stale = list(client.scan_iter(f"{PREFIX}:*"))
    if stale:
        client.delete(*stale)


@pytest.fixture
def present_worker(redis_server):
    """An interactive worker's presence key, for tests of the queueing path that run no worker."""
    from webapp.core.presence import PREFIX, workers_publish
    from webapp.playground import services

    client = services.playground_redis()
    workers_publish(client, "present@test", ["interactive"])
    yield
    client.delete(PREFIX + "present@test")


@pytest.fixture(scope="module")
def worker(django_db_setup, django_db_blocker, tmp_path_factory):
    """One real `interactive` Celery worker for a whole test module (it needs no database: jobs carry paths)."""
    with django_db_blocker.unblock():
        process = WorkerProcess("interactive", os.environ["REDIS_URL"], tmp_path_factory.mktemp("worker") / "worker.log")
    process.wait_ready()
    yield process
    process.stop()


@pytest.fixture
def tiny(transactional_db, tmp_path):
    """A published model named `tiny` (random weights, reverse task), registered as the admins would."""
    from webapp.registry.services import model_register_folder

    folder = make_model_folder(tmp_path / "tiny")
    return model_register_folder(folder=folder, name="tiny", task="reverse", published=True)


async def connected(user: Any) -> WebsocketCommunicator:
    ws = await socket_for("/ws/decode/", user)
    ok, _ = await ws.connect()
    assert ok
    return ws


async def receive(ws: WebsocketCommunicator, timeout: float = 20) -> dict[str, Any]:
    return json.loads(await ws.receive_from(timeout=timeout))


async def until_final(ws: WebsocketCommunicator, timeout: float = 30) -> list[dict[str, Any]]:
    """Frames up to and including the request's `done` or `error`."""
    frames: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not frames or frames[-1]["type"] not in ("done", "error"):
        frames.append(await receive(ws, timeout=max(0.1, deadline - loop.time())))
    return frames


async def nothing_arrives(ws: WebsocketCommunicator, seconds: float) -> bool:
    return await ws.receive_nothing(timeout=seconds, interval=0.02)
