"""The door refuses past a session's or an address's budget in the event loop, before Django, and a well-behaved
student behind the same address still gets in.

The first tests drive the middleware directly, in front of a small ASGI app that records what reaches it (Django's
place); the last one runs the real web process (daphne) and speaks to it as a browser and a script would.
"""
from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
import uuid

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings as django_settings
from django.test import Client
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from webapp.realtime import door

SCHOOL = "203.0.113.20"  # one NAT address for the whole class


@pytest.fixture
def budgets(settings):
    settings.DOOR_LIMITS = True
    settings.DOOR_SESSION_PER_MINUTE, settings.DOOR_SESSION_BURST = 60, 10
    settings.DOOR_SESSION_DEMOS_PER_MINUTE, settings.DOOR_SESSION_DEMO_BURST = 6, 3
    settings.DOOR_ADDRESS_PER_MINUTE, settings.DOOR_ADDRESS_BURST = 6000, 500
    settings.DOOR_ANONYMOUS_PER_MINUTE, settings.DOOR_ANONYMOUS_BURST = 60, 20
    settings.DOOR_ANONYMOUS_SOCKETS_PER_MINUTE, settings.DOOR_ANONYMOUS_SOCKET_BURST = 60, 20
    settings.DOOR_STATIC_PER_MINUTE, settings.DOOR_STATIC_BURST = 600, 100
    settings.DOOR_REFUSAL_WAIT_MS, settings.DOOR_HELD_PER_ADDRESS = 200, 4
    door.forget_known()
    yield settings
    door.forget_known()


class Inner:
    """Django's place: answers 200 ("Answered from the cache" for a demonstration) and notes who reached it."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, scope, receive, send) -> None:
        self.seen.append(scope["tag"])
        if scope["type"] == "websocket":
            await receive()
            await send({"type": "websocket.accept"})
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"Answered from the cache"})


def scope(tag: str, session: str | None, path: str = "/lesson/encoder/", method: str = "GET", kind: str = "http",
          address: str = SCHOOL) -> dict:
    headers = [(b"cookie", f"csrftoken=abc; {django_settings.SESSION_COOKIE_NAME}={session}".encode())] if session else []
    return {"type": kind, "method": method, "path": path, "headers": headers, "tag": tag, "client": [address, 5000]}


async def call(app, *args, **kw) -> list[dict]:
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "websocket.connect"} if kw.get("kind") == "websocket" else {"type": "http.request"}

    await app(scope(*args, **kw), receive, send)
    return sent


def door_for(*known: str) -> tuple[door.Door, Inner]:
    """A door before Django's place, these sessions already seen signed in."""
    for key in known:
        door.note_known(key)
    inner = Inner()
    return door.Door(inner), inner


def status(sent: list[dict]) -> int:
    return sent[0]["status"]


def test_a_script_flooding_one_session_is_refused_429_while_a_classmate_on_the_same_address_gets_in(budgets):
    app, inner = door_for("script", "classmate")

    async def scenario():
        flood = await asyncio.gather(*(call(app, f"s{i}", "script") for i in range(30)))
        classmate = await call(app, "classmate", "classmate")
        return flood, classmate

    started = time.monotonic()
    flood, classmate = asyncio.run(scenario())
    refused = [sent for sent in flood if status(sent) == 429]
    assert len(refused) == 20 and len(flood) - len(refused) == 10  # its burst, then nothing
    for sent in refused:
        headers = dict(sent[0]["headers"])
        assert int(headers[b"retry-after"]) >= 1 and "try again in" in sent[1]["body"].decode()
    assert status(classmate) == 200 and "classmate" in inner.seen
    assert sorted(inner.seen) == sorted([f"s{i}" for i in range(10)] + ["classmate"])  # Django never saw the rest
    assert time.monotonic() - started >= 0.2  # the refusals waited (a loop of them runs no faster)


def test_a_refusal_waits_twice_as_long_as_the_one_before_it_up_to_eight_times(budgets, monkeypatch):
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(round(seconds, 3))

    monkeypatch.setattr(door.asyncio, "sleep", sleep)
    app, _ = door_for("script", "classmate")

    async def scenario():
        for i in range(16):
            await call(app, f"s{i}", "script")
        await call(app, "classmate", "classmate")

    asyncio.run(scenario())
    assert slept == [0.2, 0.4, 0.8, 1.6, 1.6, 1.6]  # its 10, then each refusal in a row; the classmate not at all


def test_cached_demonstrations_count_against_the_session_s_demonstration_budget(budgets):
    budgets.DOOR_REFUSAL_WAIT_MS = 20
    app, _ = door_for("looper", "student")

    async def scenario():
        loops = [await call(app, f"d{i}", "looper", path="/lesson/demo/encoder/", method="POST") for i in range(8)]
        page = await call(app, "page", "looper")  # its other requests have their own budget
        other = await call(app, "other", "student", path="/lesson/demo/encoder/", method="POST")
        return loops, page, other

    loops, page, other = asyncio.run(scenario())
    assert [status(sent) for sent in loops] == [200] * 3 + [429] * 5
    assert status(page) == 200 and status(other) == 200
    assert app.refused["demonstrations"] == 5


def test_anonymous_handshakes_with_made_up_cookies_are_refused_at_the_door_not_the_signed_in_class(budgets):
    budgets.DOOR_REFUSAL_WAIT_MS = 0

    async def scenario():
        flood = [await call(app, f"a{i}", uuid.uuid4().hex, path="/ws/decode/", kind="websocket") for i in range(40)]
        student = await call(app, "student", "student", path="/ws/decode/", kind="websocket")
        static = await call(app, "static", None, path="/static/css/site.css")  # the sign-in page's files
        return flood, student, static

    app, _ = door_for("student")
    flood, student, static = asyncio.run(scenario())
    refused = [sent for sent in flood if sent[0]["type"] == "websocket.close"]
    assert len(refused) == 20 and all(sent == [{"type": "websocket.close", "code": door.REFUSED_CLOSE}]
                                      for sent in refused)  # 403 in the handshake: nothing to read, no thread
    assert student == [{"type": "websocket.accept"}] and status(static) == 200
    assert app.refused["anonymous sockets"] == 20


def test_a_signed_in_socket_past_its_budget_is_told_why_and_when(budgets):
    budgets.DOOR_REFUSAL_WAIT_MS = 0
    app, _ = door_for("tabs")

    async def scenario():
        return [await call(app, f"t{i}", "tabs", path="/ws/notify/", kind="websocket") for i in range(11)]

    last = asyncio.run(scenario())[-1]
    assert last[0] == {"type": "websocket.accept"} and last[2] == {"type": "websocket.close", "code": 4429}
    frame = json.loads(last[1]["text"])
    assert frame["code"] == "rate_limited" and frame["retry_after"] >= 1


def test_past_the_refusals_an_address_may_have_waiting_the_rest_are_answered_at_once(budgets):
    budgets.DOOR_REFUSAL_WAIT_MS = 2000
    budgets.DOOR_ANONYMOUS_BURST = 1
    app = door.Door(Inner())

    async def scenario():
        await call(app, "first", None, path="/accounts/login/")
        started = time.monotonic()
        waiting = [asyncio.ensure_future(call(app, f"w{i}", None, path="/accounts/login/")) for i in range(4)]
        await asyncio.sleep(0.05)
        at_once = await call(app, "at once", None, path="/accounts/login/")
        took = time.monotonic() - started
        for task in waiting:
            task.cancel()
        return at_once, took

    at_once, took = asyncio.run(scenario())
    assert status(at_once) == 429 and took < 1.0


def test_the_session_of_a_signed_in_request_becomes_known_and_an_anonymous_one_does_not(budgets, client_as, student):
    client = client_as(student)
    assert client.get("/lesson/encoder/").status_code == 200
    assert client.cookies["sessionid"].value in door._known
    anonymous = Client()
    anonymous.cookies["sessionid"] = "made-up-cookie-value"
    anonymous.get("/lesson/encoder/")
    assert "made-up-cookie-value" not in door._known


def test_with_the_default_budgets_a_class_of_200_behind_one_address_loads_its_pages_at_once(settings):
    settings.DOOR_LIMITS = True  # the shipped budgets otherwise
    door.forget_known()
    students = [f"student-{i}" for i in range(200)]
    app, inner = door_for(*students)

    async def scenario():
        pages = await asyncio.gather(*(call(app, f"{key} {i}", key, path=path) for key in students
                                       for i, path in enumerate(["/lesson/encoder/", "/static/css/site.css",
                                                                 "/static/js/lesson.js", "/lesson/demo/encoder/"] * 2)))
        sockets = await asyncio.gather(*(call(app, f"{key} ws", key, path="/ws/notify/", kind="websocket")
                                         for key in students))
        return pages, sockets

    pages, sockets = asyncio.run(scenario())
    door.forget_known()
    assert {status(sent) for sent in pages} == {200} and len(pages) == 1600
    assert all(sent == [{"type": "websocket.accept"}] for sent in sockets)


def test_off_the_door_lets_everything_through(budgets):
    budgets.DOOR_LIMITS = False
    budgets.DOOR_ANONYMOUS_BURST = 1
    app = door.Door(Inner())

    async def scenario():
        return [await call(app, f"x{i}", None) for i in range(5)]

    assert [status(sent) for sent in asyncio.run(scenario())] == [200] * 5


@pytest.mark.services
def test_through_the_web_process_a_script_gets_429_and_a_classmate_still_gets_in(
        transactional_db, tmp_path, student, django_user_model):
    from tests.fixtures.services import start_web, stop_web

    script, classmate = Client(), Client()  # signed in before the web process starts: it knows them from the database
    script.force_login(student, backend="django.contrib.auth.backends.ModelBackend")
    classmate.force_login(django_user_model.objects.create_user("classmate"),
                          backend="django.contrib.auth.backends.ModelBackend")
    keys = [c.cookies["sessionid"].value for c in (script, classmate)]
    web = start_web(tmp_path / "daphne.log", DOOR_LIMITS="1", DOOR_SESSION_DEMOS_PER_MINUTE="6",
                    DOOR_SESSION_DEMO_BURST="3", DOOR_ANONYMOUS_PER_MINUTE="1", DOOR_ANONYMOUS_BURST="3",
                    DOOR_ANONYMOUS_SOCKETS_PER_MINUTE="1", DOOR_ANONYMOUS_SOCKET_BURST="10",
                    DOOR_REFUSAL_WAIT_MS="50")
    try:
        def request(key: str | None, path: str, method: str = "GET") -> tuple[int, str | None]:
            req = urllib.request.Request(web.url + path, method=method, data=b"" if method == "POST" else None,
                                         headers={"Cookie": f"sessionid={key}" if key else ""})
            try:
                with urllib.request.urlopen(req, timeout=10) as response:
                    return response.status, None
            except urllib.error.HTTPError as error:
                return error.code, error.headers.get("Retry-After")

        posts = [request(keys[0], "/lesson/demo/encoder/", "POST") for _ in range(8)]
        refused = [retry for code, retry in posts if code == 429]
        assert len(refused) == 5 and all(int(retry) >= 1 for retry in refused)  # past its 3, whatever the answer
        assert request(keys[1], "/lesson/demo/encoder/", "POST")[0] != 429  # the classmate's own budget

        def socket(key: str):
            return connect(web.url.replace("http", "ws") + "/ws/decode/", origin=web.url,
                           additional_headers={"Cookie": f"sessionid={key}"}, open_timeout=10)

        async def handshakes() -> tuple[list[int], bool]:
            statuses = []
            for _ in range(20):  # made-up cookies, all from this one address
                started = time.monotonic()
                try:
                    async with socket(uuid.uuid4().hex):
                        pass
                except InvalidStatus as error:
                    statuses.append((error.response.status_code, time.monotonic() - started >= 0.05))
            async with socket(keys[1]) as ws:
                await ws.send(json.dumps({"type": "ping"}))  # open: the handshake was accepted
            return statuses, True

        statuses, classmate_in = async_to_sync(handshakes)()
        assert {code for code, _ in statuses} == {403}
        assert sum(waited for _, waited in statuses) >= 10  # past the 10 of its burst, refused at the door after a wait
        assert classmate_in
        assert [request(None, "/accounts/login/")[0] for _ in range(4)][-1] == 429  # the unknown's budget is its own
        assert request(keys[1], "/lesson/encoder/")[0] == 200  # the signed-in class's is not spent
    finally:
        stop_web(web)
