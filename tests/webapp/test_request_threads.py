"""Django's HTTP requests under the ASGI app run on kept threads: one request's code on one thread, the next
request on a thread made before, and a burst's extra threads ended past the idle cap."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from channels.testing import HttpCommunicator
from django.http import HttpResponse
from django.urls import path

from webapp.request_threads import ExecutorPool, PooledASGIHandler

pytestmark = pytest.mark.django_db(transaction=True)

SEEN: list[tuple[int, int]] = []  # (request number, thread) for every call of the view below


def thread_view(request):
    SEEN.append((int(request.GET["n"]), threading.get_ident()))
    time.sleep(float(request.GET.get("sleep", 0)))
    SEEN.append((int(request.GET["n"]), threading.get_ident()))
    return HttpResponse(str(threading.get_ident()))


urlpatterns = [path("thread/", thread_view)]


@pytest.fixture
def app(settings):
    settings.ROOT_URLCONF = __name__
    SEEN.clear()
    return PooledASGIHandler(ExecutorPool(keep_idle=2))


async def get(app, n: int, sleep: float = 0) -> int:
    communicator = HttpCommunicator(app, "GET", f"/thread/?n={n}&sleep={sleep}", headers=[(b"host", b"testserver")])
    response = await communicator.get_response(timeout=10)
    assert response["status"] == 200
    return int(response["body"])


async def settle(pool: ExecutorPool, idle: int) -> None:
    for _ in range(100):
        if len(pool.idle) >= idle:
            return
        await asyncio.sleep(0.01)


def test_requests_one_after_another_run_on_one_kept_thread(app) -> None:
    async def run() -> list[int]:
        threads = []
        for n in range(20):
            threads.append(await get(app, n))
            await settle(app.pool, 1)
        return threads

    threads = asyncio.run(run())
    assert len(set(threads)) == 1 and app.pool.started == 1
    assert threads[0] != threading.get_ident()  # not the event loop's thread


def test_a_burst_gets_a_thread_per_request_and_keeps_only_the_idle_cap(app) -> None:
    async def run() -> list[int]:
        threads = await asyncio.gather(*(get(app, n, sleep=0.2) for n in range(5)))
        await settle(app.pool, 2)
        await asyncio.sleep(0.1)
        return threads

    threads = asyncio.run(run())
    assert len(set(threads)) == 5 and app.pool.started == 5  # concurrent requests never share a thread
    # each request's code ran on one thread from its start to its end
    by_request = {}
    for n, ident in SEEN:
        by_request.setdefault(n, set()).add(ident)
    assert all(len(idents) == 1 for idents in by_request.values())
    assert len(app.pool.idle) == 2
    alive = {t.ident for t in threading.enumerate()}
    assert len(set(threads) & alive) == 2  # the three past the cap ended their threads


def test_a_thread_still_running_a_request_is_not_lent_to_the_next(app) -> None:
    """A request cancelled mid-view (its client went away) leaves the view running on its thread; the next request
    gets another thread instead of waiting behind it, and the first thread is lent again once the view is done."""
    async def run() -> tuple[int, int, int]:
        slow = asyncio.ensure_future(get(app, 1, sleep=0.5))
        await asyncio.sleep(0.1)
        slow.cancel()
        await asyncio.gather(slow, return_exceptions=True)
        first = next(ident for n, ident in SEEN if n == 1)  # the view started before the cancel
        fast = await get(app, 2)
        await asyncio.sleep(0.6)
        await settle(app.pool, 2)
        return first, fast, await get(app, 3)

    first, fast, later = asyncio.run(run())
    assert fast != first and later in {first, fast} and app.pool.started == 2
    assert [n for n, _ in SEEN].count(1) == 2  # the cancelled view ran to its end


def test_sync_to_async_inside_a_request_runs_on_the_request_s_thread(app) -> None:
    async def run() -> None:
        await get(app, 1)
        await settle(app.pool, 1)
        executor = app.pool.idle[-1]
        ident = executor.submit(threading.get_ident).result()
        async with ThreadSensitiveContext(executor=executor):
            assert await sync_to_async(threading.get_ident)() == ident

    asyncio.run(run())
