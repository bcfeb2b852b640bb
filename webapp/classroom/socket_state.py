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

from webapp.classroom import history, questions, services
from webapp.classroom.models import LiveSession, Question
from webapp.classroom.relay import SessionRelay
from webapp.classroom.reveal import next_token_options
from webapp.playground.services import ended_state, playground_redis

log = logging.getLogger(__name__)

SAVED_TTL_S = 3600


def drives_now(user_id: int, session: LiveSession) -> bool:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.filter(pk=user_id, is_active=True).first()
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
            "options": question.options, "seq": question.seq, "layer": question.layer, "head": question.head}


def snapshot(session: LiveSession, user: Any, drives: bool, relay: SessionRelay) -> dict[str, Any]:
    """The first frame: the session, its views, the open question and this user's answer and score."""
    state = session.state
    question = questions.open_question(session)
    snapshot: dict[str, Any] = {
        "type": "session", "code": session.code, "title": session.title, "model": session.model_name,
        "role": "console" if drives else "student", "source": state.get("source", ""),
        "params": state.get("params", {}), "views": state.get("views", []), "layer": state.get("layer"),
        "head": state.get("head", "mean"), "request_id": state.get("request_id"),
        "running": bool(state.get("running")), "question": None, "presence": 0,
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
        return orjson.dumps({"type": "state", "request_id": request_id,
                             "frames": orjson.loads(kept)["frames"] if kept else []}).decode()
    text = orjson.dumps({"type": "state", "request_id": request_id, "frames": frames}).decode()
    _ended_states[request_id] = text
    while len(_ended_states) > ENDED_STATES_KEPT:
        _ended_states.popitem(last=False)
    return text


async def run_record(relay: SessionRelay, request_id: str) -> None:
    """Keep the transcript of a run that just ended, once for all web processes (the first to claim it)."""
    claimed = await sync_to_async(playground_redis().set, thread_sensitive=False)(f"classroom:saved:{request_id}", "1", nx=True, ex=SAVED_TTL_S)
    if not claimed:
        return
    frames = [orjson.loads(text) for text in relay.frames] if relay.complete else None
    for _ in range(10) if frames is None else ():
        text = await sync_to_async(ended_state, thread_sensitive=False)(request_id)
        if text:
            frames = json.loads(text)["frames"]
            break
        await asyncio.sleep(0.1)
    try:
        await database_sync_to_async(history.run_finished, thread_sensitive=False)(request_id=request_id, frames=frames or [])
    except Exception:
        log.exception("could not keep the transcript of %s", request_id)
