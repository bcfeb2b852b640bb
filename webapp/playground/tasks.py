"""Celery tasks of the playground (queue `interactive`); torch is imported only when one runs."""
from __future__ import annotations

from typing import Any

from celery import shared_task

from webapp.playground.services import DECODE_TASK


@shared_task(name=DECODE_TASK, ignore_result=True)
def decode(jobs: list[dict[str, Any]]) -> None:
    """Hand decode requests (those the web process accepted together) to this process's batching loop.

    Returns at once. The loop streams each request's frames to its `reply` while other requests
    join and leave its batch, so a worker serves many students together even with the solo pool.
    """
    from webapp.playground.worker.loop import decode_loop

    loop = decode_loop()
    for job in jobs:
        loop.submit(job)
