"""Celery tasks of the playground (queue `interactive`); torch is imported only when one runs."""
from __future__ import annotations

from typing import Any

from celery import shared_task


@shared_task(name="webapp.playground.decode", ignore_result=True)
def decode(job: dict[str, Any]) -> None:
    """Hand one decode request to this process's batching loop and return at once.

    The loop streams the request's frames to `job["reply"]` while other requests join and leave
    its batch, so a worker serves many students together even with the solo pool.
    """
    from webapp.playground.worker.loop import decode_loop

    decode_loop().submit(job)
