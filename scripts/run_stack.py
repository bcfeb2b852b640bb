"""Run the whole stack in the foreground and keep it up: embedded Redis (unless REDIS_URL), the ASGI server,
four Celery workers.

A child that dies (the OOM killer, a crash, a `kill`) is logged with its name, pid and how it ended (exit
status or signal), and started again after a backoff: 1 s, then 2, 4, 8 ... up to BACKOFF_MAX_S while it keeps
dying within STABLE_S of its start; one that stayed up that long starts again after 1 s. The embedded Redis
is watched the same way (same socket, so every process finds it again). The stack stops only on Ctrl-C
(SIGINT) or SIGTERM: one of them stops every process started here, nothing left behind.

Why a loop of our own rather than a supervisor package (honcho, supervisor and circus were weighed):
honcho follows foreman, it stops every process when one exits (the behaviour this replaces); supervisor
restarts a process that ran past `startsecs` at once with no growing delay, gives up for good (FATAL) after
`startretries` quick failures, and would need a generated ini file, its RPC socket and the embedded Redis'
start and stop kept outside it; circus brings pyzmq and tornado and likewise gives up after its retries.
What is needed here is small: start each child in a process group of its own, notice its end, wait, start
it again, and stop every group on Ctrl-C; the loop below does exactly that.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.redis_embedded import EmbeddedRedis  # noqa: E402

BIN = Path(sys.executable).parent
GRACE_SECONDS = 10
BACKOFF_FIRST_S = 1.0  # the wait before restarting a child that died
BACKOFF_MAX_S = 30.0  # the longest wait, for a child that keeps dying
STABLE_S = 60.0  # a child up this long is healthy again: its next death waits BACKOFF_FIRST_S
POLL_S = 0.2


def how_it_ended(returncode: int) -> str:
    """`exit status 1` or `signal SIGKILL (9)`, from Popen's returncode."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown signal"
        return f"signal {name} ({-returncode})"
    return f"exit status {returncode}"


@dataclass
class Child:
    """One supervised process: how to start it, its current process and when to start it again."""

    name: str
    spawn: Callable[[], subprocess.Popen[bytes]]  # starts it in a process group of its own
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    deaths: int = 0  # deaths in a row, each within STABLE_S of its start
    restart_at: float | None = None

    def start(self) -> None:
        self.proc = self.spawn()
        self.started, self.restart_at = time.monotonic(), None

    def backoff(self) -> float:
        """1 s after the first death in a row, then twice as long each time, at most BACKOFF_MAX_S."""
        return min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (self.deaths - 1))

    def check(self, now: float) -> None:
        """Notice a death (log it, schedule the restart) or a due restart (start it)."""
        if self.proc is None:
            if self.restart_at is not None and now >= self.restart_at:
                try:
                    self.start()
                except (OSError, RuntimeError) as error:  # could not even start: a death like any other
                    self.deaths += 1
                    wait = self.backoff()
                    print(f"[run] {self.name} did not start ({error}); trying again in {wait:g} s", flush=True)
                    self.restart_at = time.monotonic() + wait
            return
        if self.proc.poll() is None:
            return
        up = now - self.started
        _kill_group(self.proc.pid)  # what it left in its group (a prefork pool's children) goes with it
        self.deaths = 1 if up >= STABLE_S else self.deaths + 1
        wait = self.backoff()
        print(f"[run] {self.name} (pid {self.proc.pid}) died: {how_it_ended(self.proc.returncode)} after {up:.1f} s"
              f" up; restarting it in {wait:g} s", flush=True)
        self.proc, self.restart_at = None, now + wait


def _command(name: str, argv: list[str], env: dict[str, str]) -> Child:
    def spawn() -> subprocess.Popen[bytes]:
        print(f"[run] starting {name}: {' '.join(argv)}", flush=True)
        # Own session: a terminal Ctrl-C reaches only us; we stop each child's whole group ourselves.
        return subprocess.Popen(argv, cwd=ROOT, env=env, start_new_session=True)

    return Child(name, spawn)


def _redis_child(redis: EmbeddedRedis) -> Child:
    """The embedded Redis, started again on the same socket when it dies (so every process finds it again)."""
    def spawn() -> subprocess.Popen[bytes]:
        print("[run] starting redis", flush=True)
        redis.start()
        assert redis.proc is not None
        return redis.proc

    child = Child("redis", spawn)
    child.proc, child.started = redis.proc, time.monotonic()
    return child


def _kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


def _stop(children: list[Child]) -> None:
    running = [child for child in children if child.proc is not None]
    for child in running:
        assert child.proc is not None
        if child.proc.poll() is None:
            print(f"[run] stopping {child.name}", flush=True)
            _kill_group(child.proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_SECONDS
    for child in running:
        assert child.proc is not None
        try:
            child.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for child in running:  # the group may hold grandchildren (prefork pool) even after the leader exited
        assert child.proc is not None
        _kill_group(child.proc.pid)
        child.proc.wait()


def _collect_static(env: dict[str, str]) -> None:
    """Collect static files where none are (make setup collects them for the default DATA_DIR): DEBUG off serves them."""
    data_dir = Path(env["DATA_DIR"]).expanduser().resolve() if env.get("DATA_DIR") else ROOT / "var"
    root = Path(env["STATIC_ROOT"]).expanduser() if env.get("STATIC_ROOT") else data_dir / "staticfiles"
    if not (root / "staticfiles.json").exists():
        subprocess.run([str(BIN / "python"), "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=ROOT, env=env,
                       check=True)


def _children(env: dict[str, str], port: str) -> list[Child]:
    children = [_command("web", [str(BIN / "python"), "-m", "webapp.server", "-b", "127.0.0.1", "-p", port,
                                 "webapp.asgi:application"], env)]
    # Students' experiment runs have a worker of their own: they never wait behind an admin's training job.
    # The lesson's demonstrations have theirs too: a flood of them never delays a decode.
    for queue, extra in (("interactive", ["--pool", "threads", "--concurrency", "4"]),
                         ("demonstrations", ["--pool", "threads", "--concurrency", "2"]),
                         ("experiments", ["--pool", "prefork", "--concurrency", "1"]),
                         ("training", ["--pool", "prefork", "--concurrency", "1"])):
        children.append(_command(f"worker-{queue}", [str(BIN / "celery"), "-A", "webapp", "worker", "-Q", queue, "-n",
                                                     f"{queue}@%h", "--loglevel", "INFO", *extra], env))
    return children


def main() -> int:
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings.dev")
    port = env.get("PORT", "8000")
    redis = None
    if not env.get("REDIS_URL"):
        data_dir = Path(env["DATA_DIR"]).expanduser().resolve() if env.get("DATA_DIR") else ROOT / "var"
        redis = EmbeddedRedis(data_dir / "run")  # the socket the settings expect when REDIS_URL is unset
        env["REDIS_URL"] = redis.start()
        print(f"[run] embedded Redis on {env['REDIS_URL']}", flush=True)

    stop_requested = False

    def request_stop(signum: int, _frame: object) -> None:
        nonlocal stop_requested
        stop_requested = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)

    children: list[Child] = []
    watched: list[Child] = [] if redis is None else [_redis_child(redis)]  # stopped last, by redis.stop()
    try:
        subprocess.run([str(BIN / "python"), "manage.py", "demo_accounts"], cwd=ROOT, env=env, check=True)
        _collect_static(env)
        children = _children(env, port)
        for child in children:
            child.start()
        watched += children
        print(f"[run] serving on http://127.0.0.1:{port}/  (Ctrl-C stops everything)", flush=True)
        while not stop_requested:
            now = time.monotonic()
            for child in watched:
                if not stop_requested:
                    child.check(now)
            time.sleep(POLL_S)
    finally:
        _stop(children)
        if redis is not None:
            redis.stop()
        print("[run] stopped", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
