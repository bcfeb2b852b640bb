"""`make run`'s process tree: Redis, web server and both workers come up, and one SIGINT stops them all."""
from __future__ import annotations

import asyncio
import http.cookiejar
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from tests.fixtures.services import free_port

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.services]


def descendants(pid: int) -> set[int]:
    """Every live process below `pid`, read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, stack = set(), [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.add(child)
            stack.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@contextmanager
def make_run(tmp_path: Path, *setup: str) -> Iterator[tuple[subprocess.Popen[bytes], str, Path]]:
    """`make run`'s script on a fresh DATA_DIR and a free port: (process, base URL, its log); `setup`: manage.py
    commands to run first, as `make setup` would. At the end one SIGINT, which must leave nothing behind."""
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "DATABASE_URL", "DJANGO_SETTINGS_MODULE"}}
    port = free_port()
    env.update(DATA_DIR=str(tmp_path), PORT=str(port), DEMO_PASSWORD="run-test-pass-9")
    for command in ("migrate", *setup):
        subprocess.run([sys.executable, "manage.py", command, "-v0"], cwd=ROOT, env=env, check=True)
    log = tmp_path / "run.log"
    proc = subprocess.Popen([sys.executable, "scripts/run_stack.py"], cwd=ROOT, env=env, stdout=log.open("wb"),
                            stderr=subprocess.STDOUT)
    try:
        yield proc, f"http://127.0.0.1:{port}", log
    except BaseException:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        raise
    if proc.poll() is None:
        stop_leaves_nothing(proc, tmp_path)


def health(base: str) -> tuple[int, dict[str, Any]] | None:
    """/healthz's status and report, or None while nothing answers."""
    try:
        status, body = get(base + "/healthz")
    except OSError:
        return None
    return status, json.loads(body)


def wait_healthy(base: str, log: Path, timeout: float = 120) -> dict[str, Any]:
    """/healthz's report once it says ok (four workers and daphne start on two cores: minutes are allowed)."""
    deadline, report = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        answer = health(base)
        if answer is not None:
            report = answer[1]
            if answer[0] == 200:
                break
        time.sleep(0.5)
    assert report is not None and report["status"] == "ok", log.read_text()[-3000:]
    return report


def stop_leaves_nothing(proc: subprocess.Popen[bytes], tmp_path: Path) -> None:
    """One SIGINT: every process the script started is gone, the Redis socket removed, the log says stopped."""
    started = descendants(proc.pid)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 10  # the script has returned; its children's exits may still be on their way
    while [pid for pid in started if alive(pid)] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid in started if alive(pid)] == []
    assert not (tmp_path / "run" / "redis.sock").exists()
    assert "[run] stopped" in (tmp_path / "run.log").read_text()


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[tuple[subprocess.Popen[bytes], str, Path]]:
    """One `make run` stack for this file's tests, in order (starting one takes most of a test's time): it serves, a
    killed worker and a killed Redis come back, and the last test stops it with one SIGINT."""
    with make_run(tmp_path_factory.mktemp("make-run"), "register_shipped_models") as started:
        yield started


def test_run_serves_pages_static_files_and_a_worker_on_every_queue(stack):
    proc, base, log = stack
    report = wait_healthy(base, log)
    assert all(report["workers"][queue] >= 1 for queue in ("interactive", "demonstrations", "experiments", "training"))
    status, body = get(base + "/accounts/login/")
    assert status == 200 and b"Sign in" in body
    # Debug pages only where a developer asks (DEBUG=1): an unknown address gets the app's own 404 page.
    status, body = get(base + "/no-such-page/")
    assert status == 404 and b"Page not found" in body and b"Django tried these URL patterns" not in body
    css = re.search(rb'href="(/static/css/app\.[0-9a-f]{12}\.css)"', get(base + "/accounts/login/")[1])
    assert css, "the page links no hashed stylesheet"
    with urllib.request.urlopen(urllib.request.Request(base + css[1].decode(), headers={"Accept-Encoding": "gzip"})) as r:
        assert r.headers["Content-Encoding"] == "gzip" and "max-age=315360000" in r.headers["Cache-Control"]
    assert get(base + "/favicon.ico")[0] == 200
    assert (log.parent / "run" / "redis.sock").exists()
    assert len(descendants(proc.pid)) >= 5  # redis, daphne, three workers (and the prefork children)


def interactive_worker(run_pid: int) -> int | None:
    """The pid of the interactive Celery worker `make run` started (its direct child), if one is running."""
    for pid in descendants(run_pid):
        try:
            argv = (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")
            parent = int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if parent == run_pid and b"worker" in argv and b"interactive" in argv and alive(pid):
            return pid
    return None


def sign_in(base: str, username: str, password: str) -> str:
    """A session cookie for this user, from the sign-in form as a browser would post it."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(base + "/accounts/login/", timeout=10).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token, "no CSRF token on the sign-in page"
    form = urllib.parse.urlencode({"username": username, "password": password, "csrfmiddlewaretoken": token[1]})
    opener.open(urllib.request.Request(base + "/accounts/login/", data=form.encode(), headers={"Referer": base + "/"}),
                timeout=10)
    cookies = {cookie.name: cookie.value for cookie in jar}
    assert "sessionid" in cookies, "the sign-in did not take"
    return f"sessionid={cookies['sessionid']}"


def decode(base: str, cookie: str) -> list[dict[str, Any]]:
    """One playground decode of the shipped reverse model over the real socket: its frames to the last."""
    async def scenario() -> list[dict[str, Any]]:
        async with connect(base.replace("http://", "ws://") + "/ws/decode/", origin=base,
                           additional_headers={"Cookie": cookie}, open_timeout=10) as ws:
            await ws.send(json.dumps({"type": "decode", "model": "reverse", "source": "3 h 9 5 g", "max_len": 8}))
            frames: list[dict[str, Any]] = []
            while not frames or frames[-1]["type"] not in ("done", "error"):
                frames.append(json.loads(await asyncio.wait_for(ws.recv(), 30)))
            return frames

    return asyncio.run(scenario())


def missing_then_back(base: str, queue: str, timeout: float = 120) -> tuple[float | None, float | None]:
    """Seconds until /healthz counts no worker on `queue`, then until it is ok again (None: it never did)."""
    started = time.monotonic()
    missing = None
    while time.monotonic() - started < timeout:
        answer = health(base)
        if answer is not None and missing is None and answer[1]["workers"][queue] == 0:
            missing = time.monotonic() - started
        elif answer is not None and missing is not None and answer[0] == 200:
            return missing, time.monotonic() - started
        time.sleep(0.2)
    return missing, None


def test_a_killed_worker_is_restarted_and_logged_and_the_stack_stays_up(stack):
    """SIGKILL of the interactive worker (as the OOM killer would): the web process and the other workers stay,
    the death is logged with its signal, a new worker decodes after a backoff, and one SIGINT still stops it all."""
    proc, base, log = stack
    wait_healthy(base, log)
    cookie = sign_in(base, "student", "run-test-pass-9")
    assert decode(base, cookie)[-1]["type"] == "done"
    web_pid = next(pid for pid in descendants(proc.pid) if b"webapp.server" in
                   (Path("/proc") / str(pid) / "cmdline").read_bytes())
    victim = interactive_worker(proc.pid)
    assert victim is not None
    os.kill(victim, signal.SIGKILL)
    saw_missing, back_after = missing_then_back(base, "interactive")
    text = log.read_text()
    print(f"/healthz: interactive 0 after {saw_missing} s, ok again after {back_after} s")
    assert saw_missing is not None and back_after is not None, text[-3000:]
    assert re.search(rf"\[run\] worker-interactive \(pid {victim}\) died: signal SIGKILL \(9\) after [\d.]+ s up; "
                     r"restarting it in 1 s", text), text[-3000:]
    assert "stopping" not in text  # nothing else was stopped
    assert alive(web_pid)  # the same web process served throughout
    successor = interactive_worker(proc.pid)
    assert successor is not None and successor != victim
    frames = decode(base, cookie)
    assert frames[-1]["type"] == "done", frames[-1]

    # It dies again within a minute of its start: the wait doubles.
    os.kill(successor, signal.SIGKILL)
    saw_missing, back_after = missing_then_back(base, "interactive")
    print(f"again: interactive 0 after {saw_missing} s, ok again after {back_after} s")
    assert back_after is not None
    assert re.search(rf"\[run\] worker-interactive \(pid {successor}\) died: signal SIGKILL \(9\) after [\d.]+ s "
                     r"up; restarting it in 2 s", log.read_text())

    # The embedded Redis dies: started again on its socket, every process finds it again.
    redis_pid = next(pid for pid in descendants(proc.pid) if b"redis-server" in
                     (Path("/proc") / str(pid) / "cmdline").read_bytes())
    os.kill(redis_pid, signal.SIGKILL)
    killed_at = time.monotonic()
    back_after = restarted = None
    while back_after is None and time.monotonic() - killed_at < 60:
        if restarted is None and f"redis (pid {redis_pid}) died" in (text := log.read_text()) and \
                "[run] starting redis" in text:
            restarted = time.monotonic()
        answer = health(base)  # a report checked after the restart began, not one from before the kill
        if restarted is not None and answer is not None and answer[0] == 200 and \
                time.monotonic() - answer[1]["age_s"] - 0.1 >= restarted:
            back_after = time.monotonic() - killed_at
        time.sleep(0.2)
    print(f"Redis SIGKILLed: /healthz ok again after {back_after} s")
    assert back_after is not None, log.read_text()[-3000:]
    assert f"[run] redis (pid {redis_pid}) died: signal SIGKILL (9)" in log.read_text()
    assert alive(web_pid)


def test_then_one_sigint_leaves_nothing_behind(stack):
    proc, _, log = stack
    stop_leaves_nothing(proc, log.parent)
