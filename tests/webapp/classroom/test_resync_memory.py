"""One student cannot grow the web process with resync: what a socket may leave unread is bounded (4408), resync is
answered at most once an interval, and the sockets one user may open are capped (4409). Against a real daphne with
real WebSocket clients, and in process for the pacing."""
from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.fixtures.classroom import seat, until
from tests.fixtures.playground import receive
from tests.fixtures.services import WebProcess, start_web, stop_web
from tests.fixtures.stack import cookie_for
from tests.fixtures.waiting import wait_until_async

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]

STEPS = 128
BEAMS = 8
ABUSIVE_SOCKETS = 10
RESYNC_EVERY_S = 0.11  # inside the 10 frames/s budget
ABUSE_S = 4.0
ASKED = 20


@pytest.fixture
def ended_run(session) -> str:
    """The session's last run: a beam-8, 128-step decode that ended, its transcript kept (a ~570 kB state frame)."""
    from webapp.classroom import session_run
    from webapp.classroom.services import session_state_update

    request_id = "r" * 16
    session_run.transcript_open(session=session, request_id=request_id, source="3 h 9 5 g", params={"strategy": "beam"})
    frames: list[dict[str, Any]] = [{"type": "start", "request_id": request_id, "seq": None}]
    for seq in range(STEPS):
        beams = [{"tokens": [f"t{i}" for i in range(seq % 24)], "score": -0.123456789 * seq, "alternatives":
                  [{"token": f"a{k}", "p": 0.0123456789} for k in range(11)]} for _ in range(BEAMS)]
        frames.append({"type": "beams", "request_id": request_id, "seq": seq, "beams": beams})
    frames.append({"type": "done", "request_id": request_id, "reason": "max_len"})
    session_run.run_finished(request_id=request_id, frames=frames)
    session_state_update(session=session, request_id=request_id, running=False)
    return request_id


@pytest.fixture
def web_with(transactional_db, tmp_path) -> Iterator[Any]:
    """web_with(**env) -> a daphne process with these settings from the environment, stopped after the test."""
    started: list[WebProcess] = []

    def start(**env: str) -> WebProcess:
        started.append(start_web(tmp_path / f"daphne-{len(started)}.log", **env))
        return started[-1]

    yield start
    for web in started:
        stop_web(web)


def _socket(web, path: str, cookie: str, **options: Any):
    return connect(web.url.replace("http://", "ws://") + path, origin=web.url, additional_headers={"Cookie": cookie},
                   open_timeout=10, close_timeout=2, max_size=None, **options)


def _small_buffer(web) -> socket.socket:
    """A client socket whose kernel receive buffer stays at 64 kB: what it does not read piles up in the web process,
    not in the kernel (loopback's buffers grow to tens of MB and would absorb the whole test)."""
    from urllib.parse import urlsplit

    address = urlsplit(web.url)
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65_536)  # before connect: it caps the window too
    raw.connect((address.hostname, address.port))
    raw.setblocking(False)
    return raw


class PeakRss:
    """The process's resident memory, sampled every 50 ms in a thread while the block runs."""

    def __init__(self, web: WebProcess) -> None:
        self.web, self.peak, self.done = web, web.rss_mb(), threading.Event()

    def __enter__(self) -> PeakRss:
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self) -> None:
        while not self.done.wait(0.05):
            self.peak = max(self.peak, self.web.rss_mb())

    def __exit__(self, *exc: Any) -> None:
        self.done.set()
        self.thread.join()


async def _abuse(web, code: str, cookie: str | list[str], every_s: float = RESYNC_EVERY_S) -> list[int | None]:
    """ABUSIVE_SOCKETS sockets that never read (or, for a list of cookies, that many of each user), each sending
    resync every `every_s` for ABUSE_S; their closes."""
    # max_queue=1: the client stops reading its TCP socket once a frame waits unread (as a stalled tab does)
    cookies = [cookie] * ABUSIVE_SOCKETS if isinstance(cookie, str) else cookie
    opened = [await _socket(web, f"/ws/classroom/{code}/", each, max_queue=1).__aenter__() for each in cookies]
    deadline = time.monotonic() + ABUSE_S
    while time.monotonic() < deadline:
        for ws in opened:
            try:
                await ws.send(json.dumps({"type": "resync"}))
            except ConnectionClosed:
                pass
        await asyncio.sleep(every_s)
    codes = []
    for ws in opened:
        try:
            while True:
                await asyncio.wait_for(ws.recv(), timeout=1)
        except (ConnectionClosed, TimeoutError):
            codes.append(ws.close_code)
        await ws.close()
    return codes


async def _state_once(web, code: str, cookie: str) -> None:
    """A reading socket that gets the state frame once: the process has served a classroom socket before measuring."""
    async with _socket(web, f"/ws/classroom/{code}/", cookie) as ws:
        while json.loads(await asyncio.wait_for(ws.recv(), 20))["type"] != "state":
            pass


def test_sockets_that_never_read_resync_cannot_grow_the_web_process(web_with, session, student, ended_run):
    web = web_with()
    cookie = cookie_for(student)
    async_to_sync(_state_once)(web, session.code, cookie)
    before = web.steady_rss_mb()
    with PeakRss(web) as rss:
        codes = async_to_sync(_abuse)(web, session.code, cookie)
        after = web.steady_rss_mb()
    print(f"RSS before {before:.0f} MB, peak {rss.peak:.0f} MB, after {after:.0f} MB; close codes {codes}")
    assert codes.count(4409) == ABUSIVE_SOCKETS - 8  # SOCKETS_PER_USER: the 9th and 10th are refused in words
    assert rss.peak - before < 30  # before: +130 MB in 4 s, kept
    assert after - before < 15


def test_a_class_of_stalled_tabs_cannot_grow_the_web_process(web_with, session, make_student, ended_run):
    """49 sockets of 7 students that never read, each asking for the run's 570 kB state every 0.5 s (before: +230 MB,
    kept after they closed): each holds at most one state in the web process, the process's sockets together at most
    SOCKET_SEND_PROCESS_BYTES (past it the stalled ones are closed with 4408), and the memory comes back."""
    web = web_with(SOCKET_RESYNC_EVERY_MS="0")
    cookies = [cookie_for(make_student(f"tab{i}")) for i in range(7)]
    async_to_sync(_state_once)(web, session.code, cookies[0])
    before = web.steady_rss_mb()
    with PeakRss(web) as rss:
        codes = async_to_sync(_abuse)(web, session.code, [cookie for cookie in cookies for _ in range(7)], 0.5)
        after = web.steady_rss_mb()
    print(f"RSS before {before:.0f} MB, peak {rss.peak:.0f} MB, after {after:.0f} MB; close codes {codes}")
    # 4408 for those the process's budget closed; 1006 when such a tab, reading nothing, never reached that close frame
    # and was dropped CLOSE_WAIT_S after it
    assert len(codes) == 49 and set(codes) <= {None, 1000, 1006, 4408}
    assert rss.peak - before < 60
    assert after - before < 20


def test_a_socket_whose_client_does_not_read_gets_no_state_until_the_last_has_left(web_with, session, student,
                                                                                  ended_run):
    """Every resync answered at once (SOCKET_RESYNC_EVERY_MS=0), yet a client that reads nothing while it asks for
    twenty gets no state while the last one it was sent is still in the web process: the kernel's send buffer (up to
    4 MB on loopback: about seven states) takes the first ones, then the server holds at most one, not twenty, and the
    4408 bound is never reached; once it reads, the resync it asked for meanwhile is answered once."""
    web = web_with(SOCKET_SEND_BUFFER_BYTES="65536", SOCKET_RESYNC_EVERY_MS="0")
    cookie = cookie_for(student)

    async def scenario() -> tuple[list[str], int | None]:
        async with _socket(web, f"/ws/classroom/{session.code}/", cookie, max_queue=1, sock=_small_buffer(web)) as ws:
            for _ in range(ASKED):  # 20 state frames of 570 kB asked for, while it reads nothing
                await ws.send(json.dumps({"type": "resync"}))
                await asyncio.sleep(0.11)  # absence: the tab reads nothing while it asks, a resync every 110 ms
            kinds = []
            try:
                while True:  # then it reads: what it was sent, until nothing more comes
                    kinds.append(json.loads(await asyncio.wait_for(ws.recv(), 3))["type"])
            except TimeoutError:
                return kinds, ws.close_code

    kinds, code = async_to_sync(scenario)()
    assert code is None, kinds  # still open: nothing piled up in the web process to close it for
    assert 2 <= kinds.count("state") <= ASKED - 5, kinds  # what the kernel took, then one; not one per resync


def test_one_user_may_hold_eight_sockets_and_the_ninth_is_told_why(web_with, student):
    web = web_with()
    cookie = cookie_for(student)

    async def scenario() -> tuple[dict, int | None, str]:
        opened = []
        for _ in range(8):
            opened.append(await _socket(web, "/ws/notify/", cookie).__aenter__())
            await opened[-1].recv()  # hello
        async with _socket(web, "/ws/notify/", cookie) as ninth:
            refusal = json.loads(await ninth.recv())
            try:
                await asyncio.wait_for(ninth.recv(), 5)
            except ConnectionClosed:
                pass
            code = ninth.close_code
        await opened.pop().close()

        async def opens_again() -> str | None:  # a tab closed: a socket may open again
            async with _socket(web, "/ws/notify/", cookie) as again:
                first = json.loads(await again.recv())["type"]
            return first if first == "hello" else None

        hello = await wait_until_async(opens_again, "a socket opened again once a tab closed", timeout=10, every=0.1)
        for ws in opened:
            await ws.close()
        return refusal, code, hello

    refusal, code, hello = async_to_sync(scenario)()
    assert (refusal["type"], refusal["code"], code) == ("error", "too_many_sockets", 4409)
    assert hello == "hello"


async def test_resync_in_a_loop_gets_one_state_an_interval(session, student, ended_run, settings):
    settings.SOCKET_RESYNC_EVERY_MS = 1000
    ws, _ = await seat(session, student)
    assert (await until(ws, "state"))["request_id"] == ended_run  # a joiner's state
    started = time.monotonic()
    for _ in range(10):  # within the frame budget, all within the first interval
        await ws.send_json_to({"type": "resync"})
        await asyncio.sleep(0.05)
    states = []
    try:  # every frame for 2.5 s (a receive that times out ends the app: it comes last)
        while (left := 2.5 - (time.monotonic() - started)) > 0:
            frame = await receive(ws, timeout=left)
            if frame["type"] == "state":
                states.append(time.monotonic() - started)
    except TimeoutError:
        pass
    print("state frames at", [round(at, 2) for at in states])
    assert len(states) == 2  # the first resync answered at once, the other nine once, at the interval's end
    assert states[1] >= 0.9
