"""Run the whole stack in the foreground: embedded Redis (unless REDIS_URL), ASGI server, three Celery workers.

One Ctrl-C (SIGINT) or SIGTERM stops every process started here; nothing is left behind.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.redis_embedded import EmbeddedRedis  # noqa: E402

BIN = Path(sys.executable).parent
GRACE_SECONDS = 10


def _start(name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    print(f"[run] starting {name}: {' '.join(argv)}", flush=True)
    # Own session: a terminal Ctrl-C reaches only us; we stop each child's whole group ourselves.
    return subprocess.Popen(argv, cwd=ROOT, env=env, start_new_session=True)


def _stop(children: dict[str, subprocess.Popen[bytes]]) -> None:
    for name, proc in children.items():
        if proc.poll() is None:
            print(f"[run] stopping {name}", flush=True)
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + GRACE_SECONDS
    for proc in children.values():
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for proc in children.values():
        try:  # the group may hold grandchildren (prefork pool) even after the leader exited
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _collect_static(env: dict[str, str]) -> None:
    """Collect static files where none are (make setup collects them for the default DATA_DIR): DEBUG off serves them."""
    data_dir = Path(env["DATA_DIR"]).expanduser().resolve() if env.get("DATA_DIR") else ROOT / "var"
    root = Path(env["STATIC_ROOT"]).expanduser() if env.get("STATIC_ROOT") else data_dir / "staticfiles"
    if not (root / "staticfiles.json").exists():
        subprocess.run([str(BIN / "python"), "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=ROOT, env=env,
                       check=True)


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

    children: dict[str, subprocess.Popen[bytes]] = {}
    try:
        subprocess.run([str(BIN / "python"), "manage.py", "demo_accounts"], cwd=ROOT, env=env, check=True)
        _collect_static(env)
        children["web"] = _start(
            "web", [str(BIN / "python"), "-m", "webapp.server", "-b", "127.0.0.1", "-p", port, "webapp.asgi:application"], env
        )
        # Students' experiment runs have a worker of their own: they never wait behind an admin's training job.
        # The lesson's demonstrations have theirs too: a flood of them never delays a decode.
        for queue, extra in (("interactive", ["--pool", "threads", "--concurrency", "4"]),
                             ("demonstrations", ["--pool", "threads", "--concurrency", "2"]),
                             ("experiments", ["--pool", "prefork", "--concurrency", "1"]),
                             ("training", ["--pool", "prefork", "--concurrency", "1"])):
            children[f"worker-{queue}"] = _start(
                f"worker-{queue}",
                [str(BIN / "celery"), "-A", "webapp", "worker", "-Q", queue, "-n", f"{queue}@%h",
                 "--loglevel", "INFO", *extra],
                env,
            )
        print(f"[run] serving on http://127.0.0.1:{port}/  (Ctrl-C stops everything)", flush=True)
        while not stop_requested:
            for name, proc in children.items():
                if proc.poll() is not None:
                    print(f"[run] {name} exited with {proc.returncode}; stopping the rest", flush=True)
                    stop_requested = True
                    break
            time.sleep(0.3)
    finally:
        _stop(children)
        if redis is not None:
            redis.stop()
        print("[run] stopped", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
