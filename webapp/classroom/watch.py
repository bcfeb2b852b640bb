"""A session's run watched for a worker: none took it (`no_worker`, to the console) or its worker went silent
(`worker_lost`, to every screen), once for all web processes."""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from webapp.classroom import socket_state as stored
from webapp.classroom.relay import SessionRelay, event_message, session_group
from webapp.playground.protocol import LOST_MESSAGES
from webapp.playground.relay import WATCH_EVERY_S, no_interactive_worker

log = logging.getLogger(__name__)


def lost_frame(request_id: str, code: str) -> dict[str, Any]:
    return {"type": "error", "code": code, "request_id": request_id, "message": LOST_MESSAGES[code]}


def watch_run(relay: SessionRelay, request_id: str) -> None:
    """Watch this run for this process's sockets (one watch per relay), whether or not a console here watches it."""
    watching = relay.lost_watch
    if watching is None or watching[0] != request_id or watching[1].done():  # an older run's watch ends by itself
        relay.lost_watch = (request_id, asyncio.ensure_future(watch_unheard(relay, relay.code, request_id)))


async def watch_unheard(relay: SessionRelay, code: str, request_id: str) -> None:
    """A run this process's screens follow, whatever became of its console (its web process restarted and the socket
    went with it, or it runs in another web process that died): when no worker speaks for it (a frame, a beat) for
    PLAYGROUND_WORKER_LOST_S, its worker died. End it with `worker_lost` for every screen (once, whichever process or
    console sees it first), and answer the sockets waiting for its state with what is known; the session then says it
    is not running."""
    since = time.monotonic()
    while relay.request_id == request_id and not relay.ended and relay.sockets:
        await asyncio.sleep(WATCH_EVERY_S)
        if time.monotonic() - max(since, relay.heard) <= settings.PLAYGROUND_WORKER_LOST_S:
            continue
        if relay.request_id != request_id:
            return
        if await stored.run_ended_by_its_worker(relay, request_id):  # the end did not reach this process: not lost
            waiting, relay.waiting = relay.waiting, []
            await send_ended_state(list(dict.fromkeys([*waiting, *([] if relay.ended else relay.sockets)])), request_id)
            return
        if await stored.run_lost(relay, request_id, lost_frame(request_id, "worker_lost")):
            await get_channel_layer().group_send(session_group(code),
                                                 event_message(lost_frame(request_id, "worker_lost")))
        waiting, relay.waiting = relay.waiting, []
        await send_ended_state(waiting, request_id)
        return


async def send_ended_state(sockets: list[Any], request_id: str) -> None:
    """The ended run's state to these sockets (a socket closing meanwhile is skipped)."""
    if not sockets:
        return
    text = await stored.ended_state_text(request_id)
    for socket in sockets:
        try:
            await socket.send(text_data=text)
        except Exception:  # a socket closing meanwhile: the others still get it
            log.debug("state to a closing socket dropped", exc_info=True)


async def watch_queued(relay: SessionRelay, request_id: str, *, closing: Callable[[], bool],
                       refuse: Callable[[str, str], Awaitable[None]]) -> None:
    """No frame within PLAYGROUND_QUEUE_WAIT_S, or no interactive worker alive any more: no worker took the run
    (`no_worker`, by `refuse` to the console, unless its socket is `closing`). Once its first frame arrives,
    watch_run (every web process whose screens follow it) ends it with `worker_lost` if its worker goes silent."""
    waited = 0.0
    while relay.request_id != request_id:
        if waited >= settings.PLAYGROUND_QUEUE_WAIT_S or await no_interactive_worker():
            if not closing() and await stored.run_lost(relay, request_id, lost_frame(request_id, "no_worker")):
                await refuse("no_worker", "no decoding worker took this run in time; try again in a minute")
            return
        await asyncio.sleep(WATCH_EVERY_S)
        waited += WATCH_EVERY_S


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
    from webapp.classroom import lesson_steps
    from webapp.classroom.models import Question

    def read() -> dict[str, Any] | None:
        question = Question.objects.filter(pk=question_id).select_related("training_run", "experiment_run").first()
        if question is None or question.status != Question.OPEN:
            return None
        return lesson_steps.experiment_progress(question)

    last: dict[str, Any] | None = None
    try:
        while True:
            found = await database_sync_to_async(read, thread_sensitive=False)()
            if found is None:
                return
            if found != last:
                last = found
                await get_channel_layer().group_send(
                    session_group(code), event_message({"type": "experiment_progress", "question": question_id, **found}))
            if found["status"] in ("succeeded", "failed"):
                return
            await asyncio.sleep(EXPERIMENT_EVERY_S)
    except Exception:  # the database or Redis away: the console's Reveal still says why it waits
        log.warning("could not follow the experiment of question %s", question_id, exc_info=True)
    finally:
        _experiments.pop(question_id, None)
