"""`make run`'s process tree: Redis, web server and both workers come up, and one SIGINT stops them all."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

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


def test_run_serves_then_one_sigint_leaves_nothing_behind(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "DATABASE_URL", "DJANGO_SETTINGS_MODULE"}}
    port = free_port()
    env.update(DATA_DIR=str(tmp_path), PORT=str(port), DEMO_PASSWORD="run-test-pass-9")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    log = (tmp_path / "run.log").open("wb")
    proc = subprocess.Popen([sys.executable, "scripts/run_stack.py"], cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline, report = time.monotonic() + 120, None  # four workers and daphne start on two cores
        while time.monotonic() < deadline:
            try:
                status, body = get(base + "/healthz")
            except OSError:
                time.sleep(0.5)
                continue
            report = json.loads(body)
            if status == 200:
                break
            time.sleep(0.5)
        assert report is not None and report["status"] == "ok", (tmp_path / "run.log").read_text()[-3000:]
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
        assert (tmp_path / "run" / "redis.sock").exists()
        started = descendants(proc.pid)
        assert len(started) >= 5  # redis, daphne, three workers (and the prefork children)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    time.sleep(0.5)
    assert [pid for pid in started if alive(pid)] == []
    assert not (tmp_path / "run" / "redis.sock").exists()
    assert "[run] stopped" in (tmp_path / "run.log").read_text()
