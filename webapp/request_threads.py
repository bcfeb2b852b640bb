"""Django's HTTP requests on threads that are kept, not started and joined once per request.

Django's ASGI handler runs each request's synchronous code (middleware, views, the database) on a new
single-thread executor per request, whose thread is started on the event loop's thread and joined by yet another
new thread; `Thread.start` waits there until the new thread has the GIL, and meanwhile no socket's frame moves
(figures: docs/benchmarks.md, "Kept request threads").

Here a request takes an idle single-thread executor from a pool (a new one only when none is idle) and gives it
back when the request is over and its thread has finished whatever the request left running (a view whose
client went away runs to its end). The request's synchronous code still runs on one thread, the same one
throughout, as Django's thread-sensitive mode requires; the next request to take that executor runs on the
same thread afterwards. At most KEEP_IDLE executors wait idle; those past it end their thread.
"""
from __future__ import annotations

import collections
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import django
from asgiref.sync import ThreadSensitiveContext
from django.core.handlers.asgi import ASGIHandler

KEEP_IDLE = 32  # idle request threads kept for the next requests (a class's burst starts more; they end after)


class ExecutorPool:
    """Single-thread executors, each lent to one request at a time."""

    def __init__(self, keep_idle: int = KEEP_IDLE) -> None:
        self.keep_idle = keep_idle
        self.idle: collections.deque[ThreadPoolExecutor] = collections.deque()  # append and pop are atomic
        self.started = 0  # executors made (each starts one thread on its first call)

    def take(self) -> ThreadPoolExecutor:
        try:
            return self.idle.pop()
        except IndexError:
            self.started += 1
            return ThreadPoolExecutor(max_workers=1, thread_name_prefix="request")

    def give_back(self, executor: ThreadPoolExecutor) -> None:
        """Idle again once its thread has run what is queued on it: a no-op queued last marks that moment."""
        executor.submit(_nothing).add_done_callback(lambda _done: self._park(executor))

    def _park(self, executor: ThreadPoolExecutor) -> None:  # on the executor's own thread
        if len(self.idle) < self.keep_idle:
            self.idle.append(executor)
        else:
            executor.shutdown(wait=False)  # its thread ends after this callback; nothing waits for it


def _nothing() -> None:
    return None


class PooledASGIHandler(ASGIHandler):
    """Django's ASGI handler, each request's synchronous code on a thread lent by an ExecutorPool."""

    def __init__(self, pool: ExecutorPool | None = None) -> None:
        super().__init__()
        self.pool = pool or ExecutorPool()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        executor = self.pool.take()
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        finally:
            self.pool.give_back(executor)


def get_asgi_application() -> PooledASGIHandler:
    """As django.core.asgi.get_asgi_application, with request threads kept between requests."""
    django.setup(set_prefix=False)
    return PooledASGIHandler()


__all__ = ["ExecutorPool", "PooledASGIHandler", "get_asgi_application"]
