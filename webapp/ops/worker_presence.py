"""Which Celery workers are alive, per queue: each worker publishes its queues to Redis on a timer.

/healthz reads these keys instead of broadcasting to every worker and waiting for replies (a
broadcast per request held broker connections and threads for good under concurrent calls). A
worker deletes its key when it shuts down.

A worker killed outright (the OOM killer, SIGKILL) is known at once, not when its key expires:
it publishes over a Redis connection of its own, named `encdec-worker:<hostname>` (CLIENT
SETNAME), and its key records that connection's id. The kernel closes a dead process's sockets,
so Redis drops the connection the moment the process dies; a reader keeps only the workers whose
connection is still listed (CLIENT LIST ID, a look-up of those few ids, not of every client). A
worker that is alive but silent (frozen, its machine cut off with the socket still open) drops
out when its key expires after TTL_S.
"""
from __future__ import annotations

import functools
import json
import logging
import os
import threading
import time
from typing import Any

import redis
from celery import signals
from django.conf import settings

log = logging.getLogger(__name__)

PREFIX = "encdec:worker:"
INDEX = "encdec:workers"  # the set of hostnames that published: readers look up these keys instead of a SCAN
EVERY_S = 2.0  # how often a worker republishes its queues (a restarted, empty Redis has it back within this)
RETRY_S = 0.5  # after a failed publish (Redis away), the next try
TTL_S = 15  # a worker silent this long (frozen, cut off) counts as gone; a killed one goes at once (above)
CONNECTION_PREFIX = "encdec-worker:"  # the name of each worker's presence connection


def worker_presence_client(redis_url: str | None = None) -> redis.Redis:
    """A client with short timeouts: presence is never worth waiting for."""
    return redis.Redis.from_url(redis_url or settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1)


@functools.lru_cache(maxsize=4)
def shared_worker_presence_client(redis_url: str) -> redis.Redis:
    """One presence client (a thread-safe pool, short timeouts) per Redis URL, for the web side's frequent reads."""
    return worker_presence_client(redis_url)


def connection_name(hostname: str) -> str:
    """The CLIENT SETNAME of a worker's presence connection (no spaces allowed there)."""
    return CONNECTION_PREFIX + "".join(c if c.isprintable() and not c.isspace() else "_" for c in hostname)


def workers_publish(client: redis.Redis, hostname: str, queues: list[str], *, connection: tuple[int, str] | None = None
                    ) -> None:
    """Record that `hostname` consumes `queues`, for the next TTL_S seconds; `connection`: the (id, name) of the
    Redis connection whose end means the worker's (without one, only the key's expiry does)."""
    record: dict[str, Any] = {"queues": sorted(queues)}
    if connection is not None:
        record["connection"] = list(connection)
    client.set(PREFIX + hostname, json.dumps(record), ex=TTL_S)
    client.sadd(INDEX, hostname)


def workers_withdraw(client: redis.Redis, hostname: str) -> None:
    client.delete(PREFIX + hostname)
    client.srem(INDEX, hostname)


def workers_by_queue(client: redis.Redis) -> dict[str, list[str]]:
    """Names of the workers that published lately and whose connection is open, by queue.

    Three round trips whatever else Redis holds (a SCAN for the keys walked the whole keyspace:
    4.9 ms at 10,000 keys and 200 clients, against 0.3 ms for this read).
    """
    names = sorted(member.decode() for member in client.smembers(INDEX))
    raws = client.mget([PREFIX + name for name in names]) if names else []
    expired = [name for name, raw in zip(names, raws, strict=True) if raw is None]
    if expired:  # gone silent (or withdrawn): out of the index until it publishes again
        client.srem(INDEX, *expired)
    records = [(name, json.loads(raw)) for name, raw in zip(names, raws, strict=True) if raw is not None]
    open_connections = _open_connections(client, [r["connection"][0] for _, r in records if "connection" in r])
    found: dict[str, list[str]] = {}
    for name, record in records:
        if "connection" in record and tuple(record["connection"]) not in open_connections:
            continue  # its process died: its connection went with it
        for queue in record.get("queues", []):
            found.setdefault(queue, []).append(name)
    return found


CACHE_S = 0.5  # how long a web process trusts its last read of the live workers
_read: list[Any] = [float("-inf"), {}]  # [when read, workers_by_queue then]: one read serves every queue


def queue_workers_up(queue: str) -> bool:
    """Whether a live worker consumes `queue`, read at most every CACHE_S in this process (asked per request)."""
    now = time.monotonic()
    if now - _read[0] > CACHE_S:
        _read[:] = [now, workers_by_queue(shared_worker_presence_client(settings.REDIS_URL))]
    return bool(_read[1].get(queue))


def queue_workers(queue: str) -> list[str]:
    """The names of the live workers that consume `queue` (read as queue_workers_up reads them)."""
    queue_workers_up(queue)
    return list(_read[1].get(queue, []))


def _open_connections(client: redis.Redis, ids: list[int]) -> set[tuple[int, str]]:
    """(id, name) of those of these Redis connections that are still open."""
    if not ids:
        return set()
    try:
        listed = client.client_list(client_id=ids)
    except redis.ResponseError:  # a Redis before 6.2 has no CLIENT LIST ID: read them all
        listed = client.client_list(_type="normal")
    return {(int(entry["id"]), entry.get("name", "")) for entry in listed}


class Publisher:
    """A worker's thread that republishes its queues every EVERY_S seconds until stopped."""

    def __init__(self, consumer: Any) -> None:
        self.consumer = consumer
        self.hostname: str = consumer.hostname
        self.client: redis.Redis | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="worker-presence", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        if self.client is not None:
            self.client.close()
        try:
            workers_withdraw(worker_presence_client(), self.hostname)
        except redis.RedisError:  # gone with Redis: the key expires on its own
            log.warning("could not withdraw %s's presence", self.hostname)

    def _queues(self) -> list[str]:
        task_consumer = getattr(self.consumer, "task_consumer", None)
        if task_consumer is not None:  # follows queues added or cancelled at run time
            return [queue.name for queue in task_consumer.queues]
        return list(self.consumer.app.amqp.queues.consume_from)

    def _run(self) -> None:
        name = connection_name(self.hostname)
        # One connection of its own, named, held for the worker's life (reopened if Redis restarts).
        self.client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1,
                                           client_name=name, single_connection_client=True)
        while True:
            wait = EVERY_S
            try:  # the connection's id is read each time: a reconnection has a new one
                connection = (int(self.client.client_id()), name)
                workers_publish(self.client, self.hostname, self._queues(), connection=connection)
            except Exception:  # Redis away for a moment: try again soon, the worker goes on
                log.warning("could not publish %s's presence", self.hostname, exc_info=True)
                wait = RETRY_S
            if self._stop.wait(wait):
                return


_publishers: dict[str, Publisher] = {}


def _close_in_child() -> None:
    """A forked pool process must not keep its parent's presence connection open: the parent's death would go
    unseen while the child lives. Closing the child's copy leaves the parent's connection as it is."""
    for publisher in _publishers.values():
        connection = getattr(publisher.client, "connection", None)
        if connection is not None:
            connection.disconnect()  # in another pid, redis-py only closes this process's file descriptor


os.register_at_fork(after_in_child=_close_in_child)


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
