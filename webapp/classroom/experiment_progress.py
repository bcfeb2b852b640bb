"""An experiment question's run followed for every screen: how far its training has come, until its result is in."""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels.db import database_sync_to_async

from webapp.classroom.models import Question
from webapp.classroom.relay import publish
from webapp.classroom.steps.comparisons import experiment_progress

log = logging.getLogger(__name__)


EXPERIMENT_EVERY_S = 0.5  # how often an open experiment question's run is read for its progress
_experiments: dict[int, asyncio.Task[None]] = {}  # question id -> its watch, in this process


def watch_experiment(code: str, question_id: int) -> None:
    """Follow the run an open experiment question predicts and tell every screen how far it has come
    (`experiment_progress`: queued, running with its progress, the result in and how long it took, or failed), until
    its result is in or the question closes. One watch per question in this process; its console starts it."""
    running = _experiments.get(question_id)
    if running is None or running.done():
        _experiments[question_id] = asyncio.ensure_future(_follow_experiment(code, question_id))


async def _follow_experiment(code: str, question_id: int) -> None:
    def read() -> dict[str, Any] | None:
        question = Question.objects.filter(pk=question_id).select_related("training_run", "experiment_run").first()
        if question is None or question.status != Question.OPEN:
            return None
        return experiment_progress(question)

    last: dict[str, Any] | None = None
    try:
        while True:
            found = await database_sync_to_async(read, thread_sensitive=False)()
            if found is None:
                return
            if found != last:
                last = found
                await publish(code, {"type": "experiment_progress", "question": question_id, **found})
            if found["status"] in ("succeeded", "failed"):
                return
            await asyncio.sleep(EXPERIMENT_EVERY_S)
    except Exception:  # the database or Redis away: the console's Reveal still says why it waits
        log.warning("could not follow the experiment of question %s", question_id, exc_info=True)
    finally:
        _experiments.pop(question_id, None)
