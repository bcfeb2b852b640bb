"""Health of the parts the app needs: the database, Redis, and live Celery workers per queue.

One background thread per web process runs the checks every REFRESH_S seconds while someone
asks; /healthz answers from its latest report and never waits on a check, however many
proxies poll at once. Workers are counted from what they publish (webapp/ops/worker_presence.py).
"""
from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from typing import Any

import redis
from celery import Celery
from django.conf import settings
from django.db import connection

from webapp.ops.worker_presence import worker_presence_client, workers_by_queue
from webapp.settings.env import redis_url_for_celery

log = logging.getLogger(__name__)

QUEUES = ("interactive", "demonstrations", "experiments", "training")
REFRESH_S = 1.0  # how often the checks run while /healthz is being asked
STALE_S = 10.0  # a report this old means the checks themselves are stuck: degraded
FIRST_WAIT_S = 1.0  # the first caller of a fresh process waits this long at most for a first report
IDLE_STOP_S = 60.0  # nobody asked this long: the checker thread ends (the next call starts it again)


def _check_database() -> dict[str, Any]:
    started = time.perf_counter()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any driver error means "down"; say which
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    finally:
        connection.close()  # this thread's own connection: never left open between checks
    return {"ok": True, "vendor": connection.vendor, "ms": round((time.perf_counter() - started) * 1000, 1)}


def _check_redis(client: redis.Redis) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        client.ping()
    except redis.RedisError as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    return {"ok": True, "ms": round((time.perf_counter() - started) * 1000, 1)}


@functools.lru_cache(maxsize=4)
def control_app(redis_url: str) -> Celery:
    """A Celery app used only to send control commands (the tests' worker ping) to the workers of one Redis."""
    app = Celery("encdec-control", set_as_current=False)
    app.conf.broker_url = redis_url_for_celery(redis_url)
    app.conf.accept_content = ["json"]
    app.conf.broker_connection_retry_on_startup = True
    return app


def health_report() -> tuple[bool, dict[str, Any]]:
    """(healthy, report), checked now: healthy when the database and Redis answer and each queue has a worker."""
    client = worker_presence_client()
    try:
        report: dict[str, Any] = {"database": _check_database(), "redis": _check_redis(client)}
        workers: dict[str, list[str]] = {}
        if report["redis"]["ok"]:
            try:
                workers = workers_by_queue(client)
            except redis.RedisError as exc:  # Redis went away mid-check
                report["workers_error"] = f"{type(exc).__name__}: {exc}"
    finally:
        client.close()
    report["workers"] = {queue: len(workers.get(queue, [])) for queue in QUEUES}
    healthy = report["database"]["ok"] and report["redis"]["ok"] and all(report["workers"][q] > 0 for q in QUEUES)
    report["status"] = "ok" if healthy else "degraded"
    return healthy, report


class HealthMonitor:
    """The process's checker thread and its latest report."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: tuple[float, bool, dict[str, Any]] | None = None  # (monotonic time, healthy, report)
        self._asked = 0.0
        self._thread: threading.Thread | None = None

    def latest(self) -> tuple[float, bool, dict[str, Any]] | None:
        """The newest (age in seconds, healthy, report), or None before the first check ends; never blocks on one."""
        with self._lock:
            self._asked = time.monotonic()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="healthz", daemon=True)
                self._thread.start()
            if self._latest is None:
                return None
            at, healthy, report = self._latest
        return time.monotonic() - at, healthy, report

    def _run(self) -> None:
        while time.monotonic() - self._asked < IDLE_STOP_S:
            try:
                healthy, report = health_report()
            except Exception as exc:  # a check that raised is a failed check, and the thread goes on
                log.exception("health check failed")
                healthy, report = False, {"status": "degraded", "error": f"{type(exc).__name__}: {exc}"}
            with self._lock:
                self._latest = (time.monotonic(), healthy, report)
            time.sleep(REFRESH_S)
        with self._lock:  # a later call starts a fresh thread and waits for a fresh report
            self._latest = None


monitor = HealthMonitor()


async def current_report() -> tuple[bool, dict[str, Any]]:
    """The latest report as callers may see it: stale counts as degraded, error texts only with DEBUG."""
    deadline = time.monotonic() + FIRST_WAIT_S
    while (latest := monitor.latest()) is None and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    if latest is None:
        return False, {"status": "starting", "workers": dict.fromkeys(QUEUES, 0)}
    age, healthy, report = latest
    report = {**report, "age_s": round(age, 1)}
    if age > STALE_S:
        healthy, report["status"] = False, "stale"
    return healthy, report if settings.DEBUG else _without_errors(report)


def _without_errors(report: dict[str, Any]) -> dict[str, Any]:
    """Exception texts name hosts, paths and versions: anonymous callers see only what is down."""
    public = {key: value for key, value in report.items() if key not in ("error", "workers_error")}
    for part in ("database", "redis"):
        if isinstance(public.get(part), dict):
            public[part] = {key: value for key, value in public[part].items() if key != "error"}
    return public
