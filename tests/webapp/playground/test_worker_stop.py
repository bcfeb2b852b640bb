"""A worker that stops mid-decode tells its clients so, instead of leaving them waiting."""
from __future__ import annotations

import pytest

from tests.fixtures.playground import SOURCE, connected, receive, until_final

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]


async def test_a_stopping_worker_ends_running_requests_with_an_error_frame(start_worker, tiny, student):
    from asgiref.sync import sync_to_async

    worker = await sync_to_async(start_worker)("interactive")
    ws = await connected(student)
    await ws.send_json_to({"type": "decode", "model": "tiny", "source": SOURCE, "pace_ms": 200,
                           "min_len": 60, "max_len": 60})
    start = await receive(ws)
    await receive(ws)
    await sync_to_async(worker.stop)()  # SIGTERM: Celery's warm shutdown
    last = (await until_final(ws))[-1]
    assert (last["type"], last["code"], last["request_id"]) == ("error", "worker_stopping", start["request_id"])
    await ws.disconnect()
