"""A class through its infrastructure's restarts: two daphne processes behind nginx (configured as docs/deploy.md
says), a live session with 50 students split across them by the proxy, a run streaming and a question open. Each
web process is restarted in turn during the run, then the proxy itself. Every screen reconnects as static/js/
socket.js does and must end with every step of the run; every student's answer is counted once; the question stays
open with its options. The figures printed go to the fault table in docs/deploy.md."""
from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from tests.fixtures.playground import SOURCE
from tests.fixtures.proxy import Proxy
from tests.fixtures.services import stop_web
from tests.fixtures.stack import Stack, cookie_for, run, web_socket
from tests.fixtures.waiting import wait_until_async

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]

STUDENTS = 50
STEPS = 60  # the tiny model's positions end at 64
PACE_MS = 200
OPTIONS = ["it copies", "it reverses", "it sorts"]
FIRST_RETRY_S, LONGEST_RETRY_S = 0.5, 8.0  # static/js/socket.js


@dataclass
class Screen:
    """One browser tab on the session, as the page's script keeps it."""

    cookie: str
    answer: str | None = None  # what this student clicks, once they see the question
    frames: list[dict[str, Any]] = field(default_factory=list)
    answered: bool = False
    drops: list[float] = field(default_factory=list)  # when the socket closed under it
    back_after: list[float] = field(default_factory=list)  # how long until it was served again (a snapshot)
    told: list[dict[str, Any]] = field(default_factory=list)  # error frames
    first_frames: list[dict[str, Any]] = field(default_factory=list)  # the console's: sent once, on its first join
    first_after: list[Screen] = field(default_factory=list)  # the tabs that join before the first frames go
    joined: bool = False  # holds a socket that has had its `session` frame
    sending: asyncio.Future[None] | None = None  # the console's first frames on their way
    since_join: list[str] = field(default_factory=list)  # the types of the frames since the last `session` frame

    def told_since_join(self) -> str:
        return f"{len(self.drops)} drops, then: {' '.join(self.since_join[-12:]) or 'nothing'}"

    def steps(self) -> list[int]:
        return [f["seq"] for f in self.frames if f["type"] == "token"]

    def whole(self) -> bool:
        return bool(self.frames) and self.frames[-1]["type"] == "done" and self.steps() == list(range(STEPS))


async def reconnecting(screen: Screen, until: float, open_socket: Any, done: Any, on_frame: Any) -> None:
    """Keep a tab open until `done(screen)` (or `until`): `open_socket()` again after each drop, waiting 0.5 s and
    doubling as static/js/socket.js does; each frame taken as the page takes it, then `await on_frame(frame)`."""
    retry = FIRST_RETRY_S
    while time.monotonic() < until and not done(screen):
        dropped = screen.drops[-1] if screen.drops else None
        try:
            async with open_socket() as ws:
                retry = FIRST_RETRY_S
                while not done(screen):
                    frame = json.loads(await asyncio.wait_for(ws.recv(), max(0.1, until - time.monotonic())))
                    await _take(ws, screen, frame, dropped)
                    dropped = None
                    await on_frame(frame)
        # A handshake the restart cut (nginx or daphne stopping before it answered: no HTTP response, or a 502/503)
        # is a drop like any other: the page's socket.js retries on every close.
        except (ConnectionClosed, InvalidHandshake, OSError, TimeoutError):
            if time.monotonic() >= until:
                return
            screen.joined = False
            screen.drops.append(time.monotonic())
            await asyncio.sleep(retry * random.uniform(0.8, 1.2))
            retry = min(retry * 2, LONGEST_RETRY_S)


async def follow(proxy: Proxy, code: str, screen: Screen, until: float, first: asyncio.Event | None = None) -> None:
    """The tab until the run is whole on it (or `until`): `state` taken as the page takes it, the open question
    answered once; `first` set once step 5 has come."""
    async def on_frame(frame: dict[str, Any]) -> None:
        if first is not None and frame["type"] == "token" and frame["seq"] >= 5:
            first.set()

    await reconnecting(screen, until, lambda: web_socket(proxy, f"/ws/classroom/{code}/", screen.cookie),
                       lambda tab: tab.whole(), on_frame)


async def _take(ws: Any, screen: Screen, frame: dict[str, Any], dropped: float | None) -> None:
    kind = frame["type"]
    screen.since_join = [] if kind == "session" else [*screen.since_join, f"{kind}:{frame.get('seq', '')}"]
    if kind == "session":
        screen.joined = True
        if screen.first_frames:
            screen.sending = asyncio.ensure_future(_send_first(ws, screen, screen.first_frames))
        screen.first_frames = []
        if dropped is not None:
            screen.back_after.append(time.monotonic() - dropped)
        question = frame.get("question")
        screen.answered = screen.answered or bool(frame.get("my_answer"))
        if question and screen.answer and not screen.answered:
            await ws.send(json.dumps({"type": "answer", "question": question["id"], "choice": screen.answer}))
    elif kind == "question" and screen.answer and not screen.answered:
        await ws.send(json.dumps({"type": "answer", "question": frame["id"], "choice": screen.answer}))
    elif kind == "answered":
        screen.answered = True
    elif kind == "state":
        screen.frames = list(frame["frames"])
    elif kind in ("start", "token", "done"):
        if kind == "token" and frame["seq"] != len(screen.steps()):
            await ws.send(json.dumps({"type": "resync"}))  # a gap: the page asks for the whole run
        screen.frames.append(frame)
        if kind == "done" and not screen.whole():
            await ws.send(json.dumps({"type": "resync"}))
    elif kind == "error":
        screen.told.append(frame)


async def _send_first(ws: Any, screen: Screen, frames: list[dict[str, Any]]) -> None:
    """The console's first frames, once the class has joined; each after the run's `start` has shown (a run closes
    an open question: the question comes after it)."""
    await wait_until_async(lambda: all(tab.joined for tab in screen.first_after), "the class joined", timeout=60)
    for i, frame in enumerate(frames):
        if i:
            await wait_until_async(lambda: screen.frames, "the run started on the console", timeout=30)
        await ws.send(json.dumps(frame))


def _print_log_tails(folder: Any) -> None:
    for log in sorted([*folder.glob("daphne-*.log"), *folder.glob("worker-*.log")]):
        lines = [line for line in log.read_text(errors="replace").splitlines()
                 if any(word in line for word in ("ERROR", "WARNING", "Error", "Traceback", "lost", "resync"))]
        print(f"-- {log.name}: {len(lines)} warning lines, the last:", *lines[-8:], sep="\n  ")


def test_restarting_each_web_process_and_the_proxy_mid_run_loses_no_step_and_no_answer(
        tmp_path, session, instructor, make_student):
    from webapp.classroom.models import Answer, Question

    stack = Stack(tmp_path)
    proxy: Proxy | None = None
    try:
        webs = [stack.web(), stack.web()]
        stack.worker()
        proxy = Proxy(tmp_path / "nginx", [web.url.removeprefix("http://") for web in webs])
        students = [Screen(cookie_for(make_student(f"s{i:02d}")), answer=OPTIONS[i % 3]) for i in range(STUDENTS)]
        console = Screen(cookie_for(instructor))
        restarts: list[tuple[str, float, float]] = []  # what, stopped at, serving again at

        async def restart_web(i: int) -> None:
            port = int(webs[i].url.rsplit(":", 1)[1])
            stopped = time.monotonic()
            await asyncio.to_thread(stop_web, webs[i])  # SIGTERM, as systemd or compose restart it
            webs[i] = await asyncio.to_thread(stack.web, port)
            restarts.append((f"web {i}", stopped, time.monotonic()))

        async def restart_proxy() -> None:
            stopped = time.monotonic()
            await asyncio.to_thread(proxy.stop)
            await asyncio.to_thread(proxy.start)
            restarts.append(("proxy", stopped, time.monotonic()))

        async def scenario() -> float:
            until = time.monotonic() + 90
            first = asyncio.Event()
            tabs = [asyncio.ensure_future(follow(proxy, session.code, s, until, first)) for s in students]
            console.first_frames = [  # a run closes an open question: the question comes second
                {"type": "run", "source": SOURCE, "pace_ms": PACE_MS, "min_len": STEPS, "max_len": STEPS},
                {"type": "question", "kind": "choice", "prompt": "What does the model do?", "options": OPTIONS}]
            console.first_after = students
            console_tab = asyncio.ensure_future(follow(proxy, session.code, console, until))
            await asyncio.wait_for(first.wait(), 30)
            started = time.monotonic()
            for i in (0, 1):
                await restart_web(i)
                await wait_until_async(lambda: all(tab.joined or tab.whole() for tab in [*students, console]),
                                       "the class back on its sockets before the next restart")
            await restart_proxy()
            await asyncio.gather(*tabs, console_tab)
            return started

        started = run(scenario)
        for what, stopped, back in restarts:
            print(f"{what}: stopped {stopped - started:.1f} s into the run, serving again after {back - stopped:.1f} s")
        drops = [len(s.drops) for s in students]
        back = sorted(b for s in students for b in s.back_after)
        print(f"students dropped {sum(drops)} times (each 1-{max(drops)}); back in p50 {back[len(back) // 2]:.2f} s, "
              f"max {back[-1]:.2f} s")
        holes = [s for s in [*students, console] if not s.whole()]
        if holes:  # what the screens and the processes said, for whoever reads the failure
            print(f"{len(holes)} screens without the whole run:", *(s.told_since_join() for s in holes[:5]), sep="\n  ")
            _print_log_tails(tmp_path)
        assert not holes, [(s.steps()[-5:], s.frames[-1:], s.told[-1:]) for s in holes[:3]]
        assert all(s.drops for s in students)  # the proxy's restart dropped every tab, and each came back
        question = Question.objects.get(session=session)
        assert question.status == Question.OPEN and question.options == OPTIONS

        async def console_counts_then_reveal() -> tuple[dict[str, Any], dict[str, Any]]:
            async with web_socket(proxy, f"/ws/classroom/{session.code}/", console.cookie) as ws:
                snapshot = json.loads(await ws.recv())
                await ws.send(json.dumps({"type": "reveal", "answer": OPTIONS[1]}))
                while (frame := json.loads(await asyncio.wait_for(ws.recv(), 10)))["type"] != "reveal":
                    assert frame["type"] != "error", frame
                return snapshot, frame

        snapshot, reveal = run(console_counts_then_reveal)
        expected = {option: sum(s.answer == option for s in students) for option in OPTIONS}
        assert snapshot["question"]["id"] == question.pk and snapshot["counts"]["counts"] == expected
        assert reveal["total"] == STUDENTS and reveal["counts"] == expected  # each student's answer, once
        answers = Answer.objects.filter(question=question)
        assert sorted((a.participant.user.username, a.choice) for a in answers.select_related("participant__user")) \
            == sorted((f"s{i:02d}", s.answer) for i, s in enumerate(students))
        lost = [f for s in students for f in s.told if f.get("code") not in ("already_answered",)]
        print("error frames seen:", sorted({f.get("code") for f in lost}))
    finally:
        if proxy is not None:
            proxy.stop()
        stack.close()
