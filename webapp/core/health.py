"""Health of the parts the app needs: the database, Redis, and live Celery workers per queue."""
from __future__ import annotations

import time
from typing import Any

import redis
from django.conf import settings
from django.db import connection

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


def workers_by_queue(timeout: float = 1.0) -> dict[str, list[str]]:
    """Names of the workers that answer a broadcast, grouped by the queues they consume."""
    from webapp.celery import app

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
