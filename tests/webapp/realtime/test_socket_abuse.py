"""One socket cannot take the web process from the others: floods, huge frames, odd text, a revoked user.

Through a real daphne and a real WebSocket client, as an attacker with a student account would.
"""
from __future__ import annotations

import asyncio
import json
import time
from types import SimpleNamespace

import pytest
from asgiref.sync import async_to_sync
from django.test import Client
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

pytestmark = [pytest.mark.services]

FLOOD_S = 5.0


@pytest.fixture
def web(asgi_server: str) -> SimpleNamespace:
    """The web process the tests of this pytest process share (asgi_server): these tests close their own sockets
    and leave it serving; the one that reads its memory takes a web process of its own (asgi_process)."""
    return SimpleNamespace(url=asgi_server)


def _cookie(user) -> str:
    client = Client()
    client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
    return f"sessionid={client.cookies['sessionid'].value}"


def _ws(web, path: str, cookie: str, origin: str | None = None):
    url = web.url.replace("http://", "ws://") + path
    return connect(url, origin=origin or web.url, additional_headers={"Cookie": cookie}, max_size=None,
                   open_timeout=10, close_timeout=5)


async def _flood(web, cookie: str, frame: str, seconds: float) -> int | None:
    """Send `frame` as fast as the server takes it for `seconds`, reading its answers; the close code it sent."""
    async with _ws(web, "/ws/notify/", cookie) as ws:
        await ws.recv()  # hello
        reader = asyncio.ensure_future(_closed_with(ws))  # the answers, so that a close frame is not stuck behind them
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline and not reader.done():
                await ws.send(frame)
                await asyncio.sleep(0)  # a send that does not block never yields: let the answers in
        except ConnectionClosed:
            pass
        try:
            return await asyncio.wait_for(reader, timeout=max(1.0, deadline - time.monotonic()))
        except TimeoutError:
            return None  # still open


@pytest.mark.slow
def test_a_flood_of_large_frames_is_closed_with_4008_and_memory_stays_bounded(asgi_process, student):
    cookie = _cookie(student)
    before = asgi_process.steady_rss_mb()
    code = async_to_sync(_flood)(asgi_process, cookie, json.dumps({"type": "ping", "echo": "x" * 63_000}), FLOOD_S)
    grown = asgi_process.steady_rss_mb() - before
    print(f"close code {code}, web process grew {grown:.0f} MB")
    assert code == 4008
    assert grown < 100  # by design each socket holds at most a few frames (before: +500 MB in 5 s)


async def _closed_with(ws) -> int | None:
    try:
        while True:
            await asyncio.wait_for(ws.recv(), timeout=15)
    except ConnectionClosed:
        return ws.close_code


@pytest.mark.slow
def test_a_flood_of_small_frames_is_closed_with_4008(web, student):
    code = async_to_sync(_flood)(web, _cookie(student), json.dumps({"type": "ping"}), 3.0)
    assert code == 4008


def test_a_frame_over_1_mib_gets_a_close_frame_1009(web, student):
    async def scenario() -> int | None:
        async with _ws(web, "/ws/notify/", await _acookie(student)) as ws:
            await ws.recv()
            await ws.send(json.dumps({"type": "ping", "echo": "x" * (1024 * 1024 + 10)}))
            return await _closed_with(ws)

    assert async_to_sync(scenario)() == 1009


def test_a_lone_surrogate_gets_an_error_frame_and_the_socket_stays_open(web, student):
    async def scenario() -> tuple[dict, dict]:
        async with _ws(web, "/ws/notify/", await _acookie(student)) as ws:
            await ws.recv()
            await ws.send('{"type": "ping", "echo": "\\ud800"}')
            refused = json.loads(await ws.recv())
            await ws.send('{"type": "ping", "echo": "still here"}')
            return refused, json.loads(await ws.recv())

    refused, pong = async_to_sync(scenario)()
    assert refused["type"] == "error" and refused["code"] == "bad_text"
    assert pong == {"type": "pong", "echo": "still here"}


async def _acookie(user) -> str:
    from asgiref.sync import sync_to_async

    return await sync_to_async(_cookie)(user)


def _signed_in(user) -> Client:
    client = Client()
    client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
    return client


@pytest.mark.parametrize("change", ["sign_out", "deactivate", "role", "delete", "password"])
def test_a_users_sockets_close_when_their_rights_change(web, student, change):
    from asgiref.sync import sync_to_async
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    browser = _signed_in(student)
    cookie = f"sessionid={browser.cookies['sessionid'].value}"

    def revoke() -> None:
        if change == "sign_out":
            browser.post("/accounts/logout/")
        elif change == "deactivate":
            student.is_active = False
            student.save()
        elif change == "delete":
            get_user_model().objects.get(pk=student.pk).delete()  # as the admin does
        elif change == "password":  # as a password reset, `changepassword` and the admin's form do
            user = get_user_model().objects.get(pk=student.pk)
            user.set_password("a-new-password-for-tests")
            user.save()
        else:
            student.groups.remove(Group.objects.get(name="students"))
            student.groups.add(Group.objects.get_or_create(name="instructors")[0])

    async def scenario() -> tuple[int | None, int | None]:
        async with _ws(web, "/ws/notify/", cookie) as notify, _ws(web, "/ws/decode/", cookie) as decode:
            await notify.recv()
            await notify.send(json.dumps({"type": "ping"}))
            assert json.loads(await notify.recv())["type"] == "pong"  # both sockets are in before the change
            await sync_to_async(revoke)()
            return await _closed_with(notify), await _closed_with(decode)

    assert async_to_sync(scenario)() == (4401, 4401)
    if change == "password":  # and that browser's sign-in ended with the old password: it may not open another
        assert _handshake_status(web, "/ws/notify/", cookie, web.url) == 403


def _handshake_status(web, path: str, cookie: str, origin: str) -> int:
    """The HTTP status of a WebSocket handshake (101: opened)."""
    from websockets.exceptions import InvalidStatus

    async def attempt() -> int:
        try:
            async with _ws(web, path, cookie, origin=origin):
                return 101
        except InvalidStatus as refused:
            return refused.response.status_code

    return async_to_sync(attempt)()


def test_only_the_sites_own_origin_may_open_a_socket(web, student):
    cookie = _cookie(student)
    own = web.url  # http://127.0.0.1:<port>
    other_port = own.rsplit(":", 1)[0] + ":1"
    assert _handshake_status(web, "/ws/notify/", cookie, own) == 101
    assert _handshake_status(web, "/ws/notify/", cookie, other_port) == 403  # another service on this host
    assert _handshake_status(web, "/ws/notify/", cookie, own.replace("http://", "https://")) == 403
    assert _handshake_status(web, "/ws/notify/", cookie, "http://evil.example") == 403


def test_an_unknown_socket_path_is_refused_quietly(web, student):
    assert _handshake_status(web, "/ws/nothing-here/", _cookie(student), web.url) == 403
    assert _handshake_status(web, "/elsewhere", _cookie(student), web.url) == 403
