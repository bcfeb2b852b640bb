"""Django's HTTP requests under the ASGI app run on kept threads: one request's code on one thread, the next
request on a thread made before, and a burst's extra threads ended past the idle cap."""
from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from channels.testing import HttpCommunicator
from django.http import HttpResponse
from django.urls import path

from tests.fixtures.waiting import wait_until_async
from webapp.request_threads import ExecutorPool, PooledASGIHandler

pytestmark = pytest.mark.django_db(transaction=True)

SEEN: list[tuple[int, int]] = []  # (request number, thread) as the view below starts and as it ends
GATES: dict[int, threading.Event] = {}  # a request number's view, if here, runs on once the test sets it


def thread_view(request):
    n = int(request.GET["n"])
    SEEN.append((n, threading.get_ident()))
    if n in GATES:
        assert GATES[n].wait(10), f"request {n}'s view was never let go on"
    SEEN.append((n, threading.get_ident()))
    return HttpResponse(str(threading.get_ident()))


urlpatterns = [path("thread/", thread_view)]


@pytest.fixture
def app(settings):
    settings.ROOT_URLCONF = __name__
    SEEN.clear()
    GATES.clear()
    return PooledASGIHandler(ExecutorPool(keep_idle=2))


async def get(app, n: int) -> int:
    communicator = HttpCommunicator(app, "GET", f"/thread/?n={n}", headers=[(b"host", b"testserver")])
    response = await communicator.get_response(timeout=10)
    assert response["status"] == 200
    return int(response["body"])


async def settle(pool: ExecutorPool, idle: int) -> None:
    await wait_until_async(lambda: len(pool.idle) >= idle, f"{idle} threads idle in the pool", timeout=5)


def alive() -> set[int | None]:
    return {t.ident for t in threading.enumerate()}


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
        GATES.update({n: threading.Event() for n in range(5)})
        requests = [asyncio.ensure_future(get(app, n)) for n in range(5)]
        await wait_until_async(lambda: len(SEEN) == 5, "five views running at once", timeout=10)
        for gate in GATES.values():
            gate.set()
        threads = await asyncio.gather(*requests)
        await settle(app.pool, 2)
        await wait_until_async(lambda: len(set(threads) & alive()) == 2, "the threads past the idle cap ended")
        return threads

    threads = asyncio.run(run())
    assert len(set(threads)) == 5 and app.pool.started == 5  # concurrent requests never share a thread
    # each request's code ran on one thread from its start to its end
    by_request = {}
    for n, ident in SEEN:
        by_request.setdefault(n, set()).add(ident)
    assert all(len(idents) == 1 for idents in by_request.values())
    assert len(app.pool.idle) == 2
    assert len(set(threads) & alive()) == 2  # the three past the cap ended their threads


def test_a_thread_still_running_a_request_is_not_lent_to_the_next(app) -> None:
    """A request cancelled mid-view (its client went away) leaves the view running on its thread; the next request
    gets another thread instead of waiting behind it, and the first thread is lent again once the view is done."""
    async def run() -> tuple[int, int, int]:
        GATES[1] = threading.Event()
        slow = asyncio.ensure_future(get(app, 1))
        await wait_until_async(lambda: SEEN, "the slow view started")
        slow.cancel()
        await asyncio.gather(slow, return_exceptions=True)
        first = next(ident for n, ident in SEEN if n == 1)  # the view started before the cancel
        fast = await get(app, 2)  # (on the held thread it would wait for a view nobody lets go on)
        GATES[1].set()
        await wait_until_async(lambda: [n for n, _ in SEEN].count(1) == 2, "the cancelled view ran to its end")
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
