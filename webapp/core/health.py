"""Health of the parts the app needs: the database, Redis, and live Celery workers per queue."""
from __future__ import annotations

import functools
import time
from typing import Any

import redis
from celery import Celery
from django.conf import settings
from django.db import connection

from webapp.settings.env import redis_url_for_celery

QUEUES = ("interactive", "training")


def _check_database() -> dict[str, Any]:
    started = time.perf_counter()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any driver error means "down"; say which
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    return {"ok": True, "vendor": connection.vendor, "ms": round((time.perf_counter() - started) * 1000, 1)}


def _check_redis() -> dict[str, Any]:
    started = time.perf_counter()
    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    finally:
        client.close()
    return {"ok": True, "ms": round((time.perf_counter() - started) * 1000, 1)}


@functools.lru_cache(maxsize=4)
def control_app(redis_url: str) -> Celery:
    """A Celery app used only to broadcast control commands to the workers of one Redis.

    Control commands publish through the app's own producer pool, so the URL must be the app's
    broker, not just the connection passed in.
    """
    app = Celery("encdec-control", set_as_current=False)
    app.conf.broker_url = redis_url_for_celery(redis_url)
    app.conf.accept_content = ["json"]
    app.conf.broker_connection_retry_on_startup = True
    return app


def workers_by_queue(timeout: float = 1.0, redis_url: str | None = None) -> dict[str, list[str]]:
    """Names of the workers that answer a broadcast, grouped by the queues they consume."""
    app = control_app(redis_url or settings.REDIS_URL)
    replies = app.control.inspect(timeout=timeout).active_queues() or {}
    found: dict[str, list[str]] = {queue: [] for queue in QUEUES}
    for worker, queues in replies.items():
        for queue in queues:
            found.setdefault(queue["name"], []).append(worker)
    return found


def health_report() -> tuple[bool, dict[str, Any]]:
    """(healthy, report): healthy when the database and Redis answer and each queue has a worker."""
    report: dict[str, Any] = {"database": _check_database(), "redis": _check_redis()}
    if report["redis"]["ok"]:
        try:
            workers = workers_by_queue()
        except Exception as exc:  # broker trouble mid-check
            workers = {queue: [] for queue in QUEUES}
            report["workers_error"] = f"{type(exc).__name__}: {exc}"
    else:
        workers = {queue: [] for queue in QUEUES}
    report["workers"] = {queue: len(workers.get(queue, [])) for queue in QUEUES}
    healthy = (
        report["database"]["ok"] and report["redis"]["ok"] and all(report["workers"][q] > 0 for q in QUEUES)
    )
    report["status"] = "ok" if healthy else "degraded"
    return healthy, report
