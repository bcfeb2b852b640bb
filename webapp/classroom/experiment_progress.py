"""An experiment question's run followed for every screen: how far its training has come, until its result is in;
and each seed a student added after the reveal, until every screen has its curves."""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels.db import database_sync_to_async

from webapp.classroom.models import Question
from webapp.classroom.relay import publish
from webapp.classroom.steps.comparisons import experiment_progress
from webapp.classroom.steps.seeds import seed_finished, seed_frame

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


SEED_EVERY_S = 0.5  # how often a student's added seed is read for its end
_seeds: dict[int, asyncio.Task[None]] = {}  # added seed id -> its watch, in this process


def watch_seed(code: str, added_id: int) -> None:
    """Follow a student's added seed (steps/seeds.py) until its run ends, then tell every screen once (`seed_added`,
    whichever process sees the end first). The student's socket starts it; a screen that joins restarts those whose
    end no screen has heard of (their process went away)."""
    running = _seeds.get(added_id)
    if running is None or running.done():
        _seeds[added_id] = asyncio.ensure_future(_follow_seed(code, added_id))


async def _follow_seed(code: str, added_id: int) -> None:
    def read() -> tuple[bool, dict[str, Any] | None]:
        """(still to follow, the frame to send once it ended)."""
        follow, added = seed_finished(added_id)
        return follow, seed_frame(added) if added is not None else None

    try:
        while True:
            follow, frame = await database_sync_to_async(read, thread_sensitive=False)()
            if frame is not None:
                await publish(code, frame)
            if not follow:
                return
            await asyncio.sleep(SEED_EVERY_S)
    except Exception:  # the database or Redis away: a screen that joins later starts the watch again
        log.warning("could not follow added seed %s", added_id, exc_info=True)
    finally:
        _seeds.pop(added_id, None)
