"""What the classroom socket reads and writes in the database (each called in a thread) and the transcript it keeps."""
from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from typing import Any

import orjson
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from webapp.accounts.roles import user_now
from webapp.classroom import history, lesson_steps, questions, services
from webapp.classroom.models import LiveSession, Question, Run
from webapp.classroom.relay import SessionRelay
from webapp.classroom.reveal import next_token_options
from webapp.ops.redis_client import app_redis
from webapp.playground.protocol import state_text
from webapp.playground.services import decode_cancel, ended_state, request_resync

log = logging.getLogger(__name__)

SAVED_TTL_S = 3600


def drives_now(user_id: int, session: LiveSession) -> bool:
    user = user_now(user_id)
    return user is not None and services.can_drive(user, session)


def open_public(session: LiveSession) -> dict[str, Any] | None:
    question = questions.open_question(session)
    return public_question(question) if question is not None else None


def run_begin(session: LiveSession, model_name: str, state: dict[str, Any], request_id: str) -> None:
    if model_name != session.model_name:
        session.model_name = model_name
        session.save(update_fields=["model_name"])
    services.session_state_update(session=session, **state)
    history.run_started(session=session, request_id=request_id, source=state["source"], params=state["params"])


def reveal_store(question: Question, answer: str, options: list[str]) -> dict[int, tuple[bool, int]]:
    if options != question.options:
        question.options = options
        question.save(update_fields=["options"])
    return questions.question_reveal(question=question, answer=answer)


def scores_of_class(code: str) -> list[dict[str, Any]]:
    session = services.session_by_code(code)
    return questions.class_scores(session) if session is not None else []


def score_of_user(code: str, user_id: int) -> int:
    session = services.session_by_code(code)
    return questions.scores_by_user(session).get(user_id, 0) if session is not None else 0


def public_question(question: Question) -> dict[str, Any]:
    """A question as every screen sees it (never the answer before the reveal)."""
    return {"type": "question", "id": question.pk, "kind": question.kind, "prompt": question.prompt,
            "options": question.options, "seq": question.seq, "layer": question.layer, "head": question.head,
            "exercise": question.exercise or None, "experiment": lesson_steps.experiment_public(question)}


def snapshot(session: LiveSession, user: Any, drives: bool, relay: SessionRelay, language: str = "en") -> dict[str, Any]:
    """The first frame: the session, its views, the open question and this user's answer and score."""
    state = session.run_state
    question = questions.open_question(session)
    snapshot: dict[str, Any] = {
        "type": "session", "code": session.code, "title": session.title, "model": session.model_name,
        "role": "console" if drives else "student", "source": state.source, "params": state.params,
        "views": state.views, "layer": state.layer, "head": state.head, "request_id": state.request_id,
        "running": bool(state.running), "question": None, "presence": 0,
        "lesson": lesson_steps.with_html(session, lesson_steps.lesson_frame(state.lesson), user, language),
        "demo": lesson_steps.with_html(session, lesson_steps.demo_frame(session, state.demo), user, language),
    }
    if question is not None:
        public = public_question(question)
        if question.kind == Question.NEXT_TOKEN and not public["options"] and relay.held_seq is not None:
            held = relay.frame(question.request_id, question.seq)
            public["options"] = next_token_options(held) if held is not None else []
        snapshot["question"] = public
        snapshot["my_answer"] = questions.my_answer(question, user)
        if drives:
            counts = questions.live_counts(question.pk)
            snapshot["counts"] = {"question": question.pk, "counts": counts, "total": sum(counts.values())}
    if drives:
        snapshot["scores"] = questions.class_scores(session)
    else:
        snapshot["score"] = questions.score_of(session, user)
    return snapshot


_ended_states: OrderedDict[str, str] = OrderedDict()  # request id -> its `state` frame, for the last few ended runs
ENDED_STATES_KEPT = 4


async def ended_state_text(request_id: str) -> str:
    """The `state` frame of a run that ended, as text: its kept transcript (read once per process, as it changes no
    more), else the worker's copy in Redis, else no frames. A class resyncing reads it from memory, not 570 kB of JSON
    from the database each time."""
    text = _ended_states.get(request_id)
    if text is not None:
        _ended_states.move_to_end(request_id)
        return text
    frames = await database_sync_to_async(history.run_frames, thread_sensitive=False)(request_id)
    if frames is None:
        kept = await sync_to_async(ended_state, thread_sensitive=False)(request_id)
        return state_text(request_id, _texts(orjson.loads(kept)["frames"] if kept else []))
    text = state_text(request_id, _texts(frames))
    _ended_states[request_id] = text
    while len(_ended_states) > ENDED_STATES_KEPT:
        _ended_states.popitem(last=False)
    return text


def _texts(frames: list[dict[str, Any]]) -> list[str]:
    return [orjson.dumps(frame).decode() for frame in frames]


STEPS_LOST = ("some of this run's steps were lost on their way to this screen (the message service was away) and "
              "could not be fetched again")


async def _workers_copy(request_id: str) -> list[dict[str, Any]] | None:
    """The frames the worker kept when this run ended (it writes them as it sends `done`: a moment may pass)."""
    for _ in range(10):
        text = await sync_to_async(ended_state, thread_sensitive=False)(request_id)
        if text:
            return json.loads(text)["frames"]
        await asyncio.sleep(0.1)
    return None


def _with_hole_named(relay: SessionRelay, request_id: str) -> list[dict[str, Any]]:
    """This process's incomplete copy of a run, ended by an error frame that says steps are missing."""
    frames = [orjson.loads(text) for text in relay.frames]
    return [*frames, {"type": "error", "code": "steps_lost", "request_id": request_id, "message": STEPS_LOST}]


async def run_gap(relay: SessionRelay, request_id: str, ended: bool) -> None:
    """A step of this run never reached this process: ask its worker for its whole copy (a running run answers with a
    `state` between two steps), or take the copy it kept (an ended run). The relay's screens wait for it meanwhile."""
    if not ended:
        await sync_to_async(request_resync, thread_sensitive=False)(request_id)
        return
    frames = await _workers_copy(request_id)
    await relay.state_arrived(request_id, {"frames": frames if frames is not None else _with_hole_named(relay, request_id)})


async def run_record(relay: SessionRelay, request_id: str, *, workers_copy_first: bool = False) -> None:
    """Keep the transcript of a run that just ended, once for all web processes (the first to claim it): this
    process's copy when whole (unless `workers_copy_first`), else the worker's; a hole neither fills is kept with an
    error frame naming it."""
    claimed = await sync_to_async(app_redis().set, thread_sensitive=False)(f"classroom:saved:{request_id}", "1", nx=True, ex=SAVED_TTL_S)
    if not claimed:
        return
    mine = relay.complete and not workers_copy_first
    frames = [orjson.loads(text) for text in relay.frames] if mine else await _workers_copy(request_id)
    if frames is None:
        frames = _with_hole_named(relay, request_id) if relay.request_id == request_id and relay.frames else []
    try:
        await database_sync_to_async(history.run_finished, thread_sensitive=False)(request_id=request_id, frames=frames)
    except Exception:
        log.exception("could not keep the transcript of %s", request_id)


def _lost(request_id: str, frames: list[dict[str, Any]], error: dict[str, Any]) -> bool:
    """In a thread: claim the lost run once for all web processes, end it (the session idle, its transcript kept
    with the error as its last frame); False when another process claimed it, it ended, or a newer run replaced it."""
    if not app_redis().set(f"classroom:lost:{request_id}", "1", nx=True, ex=SAVED_TTL_S):
        return False
    run = Run.objects.filter(request_id=request_id).select_related("session").first()
    session = run.session if run is not None else None
    state = session.run_state if session is not None else None
    if state is None or state.running_request != request_id:
        return False
    # A worker that comes back finds the cancel flag and drops it; the driver's slot is freed.
    decode_cancel(user_id=state.driver or session.instructor_id, request_ids=[request_id])
    history.run_finished(request_id=request_id, frames=[*frames, error])  # marks the session not running
    _ended_states.pop(request_id, None)
    return True


async def run_ended_by_its_worker(relay: SessionRelay, request_id: str) -> bool:
    """Whether the run's worker ended it (it keeps its copy as it sends `done`), though this process did not see the
    end: its relay began following after the `done`, or the process was too busy to read it in time. The run is then
    kept from the worker's copy (once for all processes), never called lost."""
    if not await sync_to_async(ended_state, thread_sensitive=False)(request_id):
        return False
    await run_record(relay, request_id, workers_copy_first=True)
    return True


async def run_lost(relay: SessionRelay, request_id: str, error: dict[str, Any]) -> bool:
    """End a run no worker answers for (`no_worker`, `worker_lost`) with the frames that reached this process:
    a reconnecting screen then gets them and the error as the run's `state`, and the session says it is not running."""
    frames = [orjson.loads(text) for text in relay.frames] if relay.request_id == request_id else []
    return await database_sync_to_async(_lost, thread_sensitive=False)(request_id, frames, error)
