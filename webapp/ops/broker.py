"""The Celery worker's consumer, reconnecting to a restarted Redis within a second or two.

Celery's own consumer retries a lost broker connection after 2 s, then 4 s more, then 6 s
more (kombu's defaults, which Celery offers no setting for): after a Redis restart of a few
seconds a worker took up to 12 s to take new decode requests. This one retries every 0.5 s,
then every 1 s, so a decode asked for after Redis is back is served within seconds.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from celery import bootsteps
from celery.worker.consumer import Consumer
from celery.worker.state import maybe_shutdown
from django.db import connection

log = logging.getLogger(__name__)


class QuickReconnectConsumer(Consumer):
    """Celery's consumer with shorter reconnect intervals (settings.CELERY_WORKER_CONSUMER)."""

    def ensure_connected(self, conn: Any) -> Any:
        def _error_handler(exc: Exception, interval: float) -> None:
            self.broker_connection_retry_attempt += 1
            log.error("consumer: cannot connect to %s: %s; trying again in %.1f s", conn.as_uri(), exc, interval)

        conn = conn.ensure_connection(
            _error_handler, self.app.conf.broker_connection_max_retries, callback=maybe_shutdown,
            interval_start=0.5, interval_step=0.5, interval_max=1,
        )
        self.first_connection_attempt = False
        self.broker_connection_retry_attempt = 0
        return conn


def consumes(consumer: Any, queue: str) -> bool:
    """Whether this worker's consumer reads `queue`."""
    queues = getattr(getattr(consumer, "task_consumer", None), "queues", None) or []
    return any(getattr(each, "name", None) == queue for each in queues)


def on_every_connect(app: Any, queue: str, action: Callable[[], Any], what: str, key: str | None = None) -> None:
    """Run `action` in each worker reading `queue` whenever its consumer has connected to the broker.

    That is at the worker's start and after every reconnect, once the consumer has declared its
    queues (an exchange with no queue bound drops what it is sent). A Redis that restarts empty
    has lost every queued message: this is where a worker sends again what the database says is
    still waiting. `what` names the action in the log when it fails (the next connect tries again); `key` names
    its step where the action's own name is not unique on the queue (the same method of two tables).
    """
    key = key or action.__name__

    def start(self: Any, consumer: Any) -> None:
        if not consumes(consumer, queue):
            return
        try:
            action()
        except Exception:
            log.exception("could not %s", what)
        finally:
            connection.close()

    step = type(f"OnConnect_{queue}_{key.replace('.', '_')}", (bootsteps.StartStopStep,), {
        "name": f"{__name__}.on_connect.{queue}.{key}",  # one step per action: a queue may have several
        "requires": ("celery.worker.consumer.tasks:Tasks",),
        "start": start,
        "__doc__": f"Each time a worker reading {queue!r} connects to the broker: {what}.",
    })
    app.steps["consumer"].add(step)


def send_queued_again(queued: Any, task: str, queue: str | None = None) -> int:
    """Send `task` again for every row of `queued` (a queryset of runs still queued in the database): after a Redis
    that restarted empty their messages are gone. A run whose message survived gets two; its task must find it
    running or ended the second time and do nothing."""
    from webapp.celery import app

    run_ids = list(queued.values_list("pk", flat=True))
    for run_id in run_ids:
        app.send_task(task, args=[run_id], **({"queue": queue} if queue else {}))
    if run_ids:
        log.info("sent %d queued %s again", len(run_ids), task)
    return len(run_ids)
