"""A session refused for its rate waits the refusal out in the event loop before Django sees its next request.

HoldRefused is an ASGI middleware: here it is driven directly, in front of a small ASGI app that records
what reaches it (Django's place), so the order of arrivals is what is checked, not seconds.
"""
from __future__ import annotations

import asyncio
import json
import time

import pytest
from django.conf import settings

from webapp.realtime import hold

PREFIX = "/lesson/demo/"


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(hold, "_refused", {})
    monkeypatch.setattr(hold, "_prefixes", ())
    monkeypatch.setattr(hold, "HOLD_S", 0.3)


class Inner:
    """Django's place: answers 200 and notes each request's tag in arrival order."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, scope, receive, send) -> None:
        self.seen.append(scope["tag"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"django"})


def scope(tag: str, session: str | None, path: str = PREFIX + "encoder/") -> dict:
    headers = [(b"cookie", f"csrftoken=abc; {settings.SESSION_COOKIE_NAME}={session}".encode())] if session else []
    return {"type": "http", "method": "POST", "path": path, "headers": headers, "tag": tag}


async def call(app, tag: str, session: str | None, **kw) -> tuple[int, dict[bytes, bytes], bytes]:
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    await app(scope(tag, session, **kw), receive, send)
    return sent[0]["status"], dict(sent[0]["headers"]), sent[1]["body"]


def test_a_refused_session_waits_while_others_go_straight_through():
    inner = Inner()
    app = hold.HoldRefused(inner)
    hold.note_refused("refused-session", PREFIX, 5)

    async def scenario():
        held = asyncio.ensure_future(call(app, "held", "refused-session"))
        await asyncio.sleep(0)
        others = await asyncio.gather(call(app, "other student", "other-session"), call(app, "signed out", None),
                                      call(app, "a page of the same student", "refused-session", path="/lesson/"))
        assert inner.seen == ["other student", "signed out", "a page of the same student"]  # not behind the held one
        status, _, body = await held
        return others, status, body

    others, status, body = asyncio.run(scenario())
    assert [o[0] for o in others] == [200, 200, 200]
    assert (status, body) == (200, b"django")  # held, then answered by Django as before: nothing dropped
    assert inner.seen[-1] == "held"


def test_past_the_per_session_bound_a_script_is_answered_429_with_the_wait_and_django_never_sees_it(monkeypatch):
    monkeypatch.setattr(hold, "HELD_PER_SESSION", 3)
    inner = Inner()
    app = hold.HoldRefused(inner)
    hold.note_refused("script", PREFIX, 7)

    async def scenario():
        return await asyncio.gather(*(call(app, f"r{i}", "script") for i in range(5)))

    answers = asyncio.run(scenario())
    assert [a[0] for a in answers].count(200) == 3
    refused = [a for a in answers if a[0] == 429]
    assert len(refused) == 2
    for _, headers, body in refused:
        assert 1 <= int(headers[b"retry-after"]) <= 7
        assert "try again in" in body.decode() and "秒后再试" in body.decode()
    assert sorted(inner.seen) == ["r0", "r1", "r2"]


def test_an_expired_refusal_holds_nothing_and_the_record_stays_bounded(monkeypatch):
    inner = Inner()
    app = hold.HoldRefused(inner)
    hold.note_refused("past", PREFIX, 0.01)
    hold.note_refused("", PREFIX, 5)  # no session: nothing to key on
    hold.note_refused("no wait", PREFIX, 0)

    async def scenario():
        await asyncio.sleep(0.05)
        return await call(app, "after", "past")

    assert asyncio.run(scenario())[0] == 200
    assert not [entry for entry in hold._refused.values() if entry.until > time.monotonic()]  # nothing still held
    monkeypatch.setattr(hold, "MAX_ENTRIES", 4)
    for i in range(10):
        hold.note_refused(f"s{i}", PREFIX, 60)
    assert len(hold._refused) <= 4  # full of live refusals: later ones are left to Django alone


def test_sockets_past_the_bound_of_a_session_refused_for_too_many_are_closed_4409_at_the_door(monkeypatch):
    monkeypatch.setattr(hold, "HELD_PER_SESSION", 2)
    reached: list[str] = []

    async def inner(scope, receive, send):
        reached.append(scope["tag"])
        if scope["type"] == "http":
            await Inner()(scope, receive, send)
        else:
            await send({"type": "websocket.close", "code": 1000})

    app = hold.HoldRefused(inner)
    hold.note_refused("tabs", "/ws/", 2)

    async def socket(tag: str, session: str, path: str = "/ws/decode/") -> list[dict]:
        sent: list[dict] = []

        async def receive():
            return {"type": "websocket.connect"}

        async def send(message):
            sent.append(message)

        await app({"type": "websocket", "path": path, "tag": tag,
                   "headers": [(b"cookie", f"{settings.SESSION_COOKIE_NAME}={session}".encode())]}, receive, send)
        return sent

    async def scenario():
        return await asyncio.gather(*(socket(f"s{i}", "tabs") for i in range(4)), socket("other", "another"),
                                    call(app, "a demonstration", "tabs"))

    *tabs, other, demonstration = asyncio.run(scenario())
    at_door = [sent for sent in tabs if sent[0]["type"] == "websocket.accept"]
    assert len(at_door) == 2
    for sent in at_door:
        assert json.loads(sent[1]["text"])["code"] == "too_many_sockets" and sent[2] == {"type": "websocket.close",
                                                                                         "code": 4409}
    assert sorted(reached) == ["a demonstration", "other", "s0", "s1"]  # held ones went on; HTTP is not held
    assert other == [{"type": "websocket.close", "code": 1000}] and demonstration[0] == 200
