"""A live session's run whose worker dies mid-decode ends in words on every screen (real daphne, worker, Redis)."""
from __future__ import annotations

import asyncio
import json
import signal
import time
from typing import Any

import pytest
from django.conf import settings

from tests.fixtures.playground import SOURCE
from tests.fixtures.stack import Stack, classroom_socket, cookie_for, frames_until, run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]


async def until_error(ws: Any, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), max(0.1, deadline - time.monotonic())))
        if frame["type"] in ("error", "done"):
            return frame


async def mid_run(console: Any, student: Any) -> None:
    """Both joined, the console runs a slow 60-step decode, and the student has seen a token: the worker is mid-run."""
    await frames_until(console, "session")
    await frames_until(student, "session")
    await console.send(json.dumps({"type": "run", "source": SOURCE, "pace_ms": 200, "min_len": 60, "max_len": 60}))
    await frames_until(student, "token")


def test_a_worker_killed_mid_run_ends_it_with_worker_lost_for_the_console_and_the_students(
        tmp_path, session, instructor, make_student):
    stack = Stack(tmp_path)
    try:
        web = stack.web()
        worker = stack.worker()
        console_cookie, student_cookie = cookie_for(instructor), cookie_for(make_student("follower"))

        async def scenario() -> tuple[dict[str, Any], dict[str, Any], float]:
            async with classroom_socket(web, session.code, console_cookie) as console, \
                    classroom_socket(web, session.code, student_cookie) as student:
                await mid_run(console, student)
                worker.stop(signal.SIGKILL)
                killed_at = time.monotonic()
                seen, told = await asyncio.gather(until_error(student), until_error(console))
                return seen, told, time.monotonic() - killed_at

        seen, told, waited = run(scenario)
        print(f"worker_lost {waited:.1f} s after the kill")
        for frame in (seen, told):
            assert (frame["type"], frame["code"]) == ("error", "worker_lost"), frame
            assert "run it again" in frame["message"]
        assert waited <= settings.PLAYGROUND_WORKER_LOST_S + 3
        session.refresh_from_db()
        assert session.state["running"] is False  # the console may run again at once
    finally:
        stack.close()


def test_students_on_another_web_process_get_worker_lost_when_the_consoles_process_and_the_worker_die(
        tmp_path, session, instructor, make_student):
    """The console on one web process, a student on another; the console's process and the worker die mid-run. The
    student's screen must not stay frozen on the last token with the session running for ever."""
    stack = Stack(tmp_path)
    try:
        console_web, student_web = stack.web(), stack.web()
        worker = stack.worker()
        console_cookie, student_cookie = cookie_for(instructor), cookie_for(make_student("elsewhere"))

        async def scenario() -> tuple[dict[str, Any], float]:
            async with classroom_socket(student_web, session.code, student_cookie) as student:
                try:
                    async with classroom_socket(console_web, session.code, console_cookie) as console:
                        await mid_run(console, student)
                        worker.stop(signal.SIGKILL)
                        console_web.proc.send_signal(signal.SIGKILL)  # the console's watch goes with it
                except Exception:  # noqa: BLE001 (the console's socket breaks as its process dies)
                    pass
                killed_at = time.monotonic()
                return await until_error(student), time.monotonic() - killed_at

        seen, waited = run(scenario)
        print(f"worker_lost {waited:.1f} s after the kill, on the other web process")
        assert (seen["type"], seen["code"]) == ("error", "worker_lost"), seen
        assert waited <= settings.PLAYGROUND_WORKER_LOST_S + 3
        session.refresh_from_db()
        assert session.state["running"] is False
    finally:
        stack.close()


async def frames_for(ws: Any, seconds: float) -> list[dict[str, Any]]:
    """Every frame the socket gets in the next `seconds`, each with `_at`: the seconds it took to come."""
    frames: list[dict[str, Any]] = []
    started = time.monotonic()
    while (left := started + seconds - time.monotonic()) > 0:
        try:
            frames.append(json.loads(await asyncio.wait_for(ws.recv(), left)))
        except TimeoutError:
            break
        frames[-1]["_at"] = time.monotonic() - started
    return frames


def test_a_run_left_running_when_the_stack_died_ends_with_worker_lost_after_the_restart(
        tmp_path, session, instructor, make_student):
    """The worker and the web process die mid-run (the console's watch with them). After they are started again the
    session must not say running for ever: a returning student is told worker_lost and the state, and the console can
    run again."""
    stack = Stack(tmp_path)
    try:
        web, worker = stack.web(), stack.worker()
        console_cookie, student_cookie = cookie_for(instructor), cookie_for(make_student("returning"))

        async def before() -> None:
            async with classroom_socket(web, session.code, console_cookie) as console, \
                    classroom_socket(web, session.code, student_cookie) as student:
                await mid_run(console, student)
                worker.stop(signal.SIGKILL)
                web.proc.send_signal(signal.SIGKILL)  # every socket of it goes, the console's watch too

        try:
            run(before)
        except Exception:  # noqa: BLE001 (the sockets' close after the kill may raise; what follows is the test)
            pass
        web.proc.wait(timeout=10)
        session.refresh_from_db()
        assert session.state["running"] is True  # what the restarted stack finds

        web = stack.web()
        stack.worker()

        async def returning() -> list[dict[str, Any]]:
            async with classroom_socket(web, session.code, student_cookie) as student:
                return await frames_for(student, settings.PLAYGROUND_WORKER_LOST_S + 4)

        seen = run(returning)
        kinds = [(f["type"], f.get("code") if f["type"] == "error" else None, round(f["_at"], 1)) for f in seen]
        print(f"a returning student got {kinds}")
        assert seen[0]["type"] == "session" and seen[0]["running"] is True
        lost = next((f for f in seen if f.get("code") == "worker_lost"), None)
        assert lost is not None, kinds
        assert lost["_at"] <= settings.PLAYGROUND_WORKER_LOST_S + 2  # not 20 s of a frozen screen
        state = next(f for f in seen if f["type"] == "state")
        assert state["frames"][-1]["code"] == "worker_lost"  # the run's end, kept for anyone who comes back
        session.refresh_from_db()
        assert session.state["running"] is False

        async def console_again() -> tuple[dict[str, Any], list[dict[str, Any]]]:
            async with classroom_socket(web, session.code, console_cookie) as console:
                snapshot = (await frames_until(console, "session"))[-1]
                await console.send(json.dumps({"type": "run", "source": SOURCE, "max_len": 6}))
                return snapshot, await frames_until(console, "done")

        snapshot, again = run(console_again)
        assert snapshot["running"] is False
        assert again[-1]["type"] == "done"
    finally:
        stack.close()
