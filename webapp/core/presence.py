"""Which Celery workers are alive, per queue: each worker publishes its queues to Redis on a timer.

/healthz reads these keys instead of broadcasting to every worker and waiting for replies (a
broadcast per request held broker connections and threads for good under concurrent calls). A
worker deletes its key when it shuts down; one killed outright drops out when the key expires.
"""
from __future__ import annotations

import json
import logging
import threading
from typing import Any

import redis
from celery import signals
from django.conf import settings

log = logging.getLogger(__name__)

PREFIX = "encdec:worker:"
EVERY_S = 2.0  # how often a worker republishes its queues (a restarted, empty Redis has it back within this)
RETRY_S = 0.5  # after a failed publish (Redis away), the next try
TTL_S = 15  # a worker silent this long (killed, frozen) counts as gone: three missed refreshes


def presence_client(redis_url: str | None = None) -> redis.Redis:
    """A client with short timeouts: presence is never worth waiting for."""
    return redis.Redis.from_url(redis_url or settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1)


def workers_publish(client: redis.Redis, hostname: str, queues: list[str]) -> None:
    """Record that `hostname` consumes `queues`, for the next TTL_S seconds."""
    client.set(PREFIX + hostname, json.dumps({"queues": sorted(queues)}), ex=TTL_S)


def workers_by_queue(client: redis.Redis) -> dict[str, list[str]]:
    """Names of the workers that published lately, by queue."""
    names = sorted(key.decode() for key in client.scan_iter(match=PREFIX + "*", count=200))
    found: dict[str, list[str]] = {}
    for name, raw in zip(names, client.mget(names) if names else [], strict=True):
        if raw is None:  # expired between the scan and the read
            continue
        for queue in json.loads(raw).get("queues", []):
            found.setdefault(queue, []).append(name[len(PREFIX):])
    return found


class Publisher:
    """A worker's thread that republishes its queues every EVERY_S seconds until stopped."""

    def __init__(self, consumer: Any) -> None:
        self.consumer = consumer
        self.hostname: str = consumer.hostname
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="worker-presence", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        try:
            presence_client().delete(PREFIX + self.hostname)
        except redis.RedisError:  # gone with Redis: the key expires on its own
            log.warning("could not withdraw %s's presence", self.hostname)

    def _queues(self) -> list[str]:
        task_consumer = getattr(self.consumer, "task_consumer", None)
        if task_consumer is not None:  # follows queues added or cancelled at run time
            return [queue.name for queue in task_consumer.queues]
        return list(self.consumer.app.amqp.queues.consume_from)

    def _run(self) -> None:
        client = presence_client()
        while True:
            wait = EVERY_S
            try:
                workers_publish(client, self.hostname, self._queues())
            except Exception:  # Redis away for a moment: try again soon, the worker goes on
                log.warning("could not publish %s's presence", self.hostname, exc_info=True)
                wait = RETRY_S
            if self._stop.wait(wait):
                return


_publishers: dict[str, Publisher] = {}


@signals.worker_ready.connect
def _on_worker_ready(sender: Any = None, **kwargs: Any) -> None:
    publisher = Publisher(sender)
    _publishers[publisher.hostname] = publisher
    publisher.start()


@signals.worker_shutdown.connect
def _on_worker_shutdown(sender: Any = None, **kwargs: Any) -> None:
    publisher = _publishers.pop(getattr(sender, "hostname", ""), None)
    if publisher is not None:
        publisher.stop()
