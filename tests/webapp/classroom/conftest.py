"""A live session on the tiny published model, and socket helpers for the classroom's tests."""
from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from tests.fixtures.sockets import socket_for
from tests.webapp.playground.conftest import SOURCE, fresh_limits, tiny, worker  # noqa: F401  (fixtures)

__all__ = ["SOURCE"]


@pytest.fixture
def session(tiny, instructor):  # noqa: F811  (the fixture imported above)
    from webapp.classroom.services import session_create

    return session_create(instructor=instructor, title="Reverse, live", model_name="tiny")


@pytest.fixture
def make_student(django_user_model):
    """make_student("name") -> a new user in the students group."""
    from django.contrib.auth.models import Group

    def make(name: str) -> Any:
        user = django_user_model.objects.create_user(username=name, password="pw-for-tests-only")
        user.groups.add(Group.objects.get_or_create(name="students")[0])
        return user

    return make


async def seat(session: Any, user: Any) -> tuple[WebsocketCommunicator, dict[str, Any]]:
    """A connected socket on the session and its first frame (the `session` snapshot)."""
    ws = await socket_for(f"/ws/classroom/{session.code}/", user)
    ok, _ = await ws.connect()
    assert ok
    first = await receive(ws)
    assert first["type"] == "session", first
    return ws, first


async def receive(ws: WebsocketCommunicator, timeout: float = 20) -> dict[str, Any]:
    return json.loads(await ws.receive_from(timeout=timeout))


async def until(ws: WebsocketCommunicator, kind: str, timeout: float = 20, **match: Any) -> dict[str, Any]:
    """The next frame of this type (and these fields), skipping the others."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        frame = await receive(ws, timeout=max(0.1, deadline - loop.time()))
        if frame["type"] == kind and all(frame.get(k) == v for k, v in match.items()):
            return frame
        assert frame["type"] != "error", f"waiting for {kind}, got {frame}"


async def collect(ws: WebsocketCommunicator, until_type: str = "done", timeout: float = 30) -> list[dict[str, Any]]:
    """Frames up to and including the first of `until_type`."""
    frames: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not frames or frames[-1]["type"] != until_type:
        frames.append(await receive(ws, timeout=max(0.1, deadline - loop.time())))
    return frames
