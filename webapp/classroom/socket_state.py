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
from webapp.classroom import history, lesson_steps, questions, services, wording
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
    """A question as every screen sees it (never the answer before the reveal), its words as stored: each screen
    gets them in its language (wording.question_for). An experiment question carries how far its run has come."""
    experiment = lesson_steps.experiment_public(question)
    if experiment is not None and question.status == Question.OPEN:
        experiment = {**experiment, "progress": lesson_steps.experiment_progress(question)}
    return {"type": "question", "id": question.pk, "kind": question.kind, "prompt": question.prompt,
            "options": question.options, "seq": question.seq, "layer": question.layer, "head": question.head,
            "exercise": question.exercise or None, "experiment": experiment}


def reveals(question: Question) -> str:
    """Whose answer a question's reveal gives: the lesson's, the training's, the instructor's or the model's."""
    if question.exercise:
        return "exercise"
    if question.training_run_id is not None or question.experiment_run_id is not None:
        return "experiment"
    return "instructor" if question.kind == Question.CHOICE else "model"


def reveal_public(question: Question) -> dict[str, Any]:
    """The `reveal` frame of a revealed question, as every screen gets it before its own part (event_frame, or the
    `session` frame of a screen that joins after it): the answer, whose it is, the counts, the lesson's words' keys,
    an exercise's explanation, a comparison's run and each arm's last loss."""
    counts = questions.answer_counts(question)
    reveal = {"type": "reveal", "question": question.pk, "kind": question.kind, "answer": question.answer,
              "reveals": reveals(question), "counts": counts, "total": sum(counts.values())}
    explained = lesson_steps.exercise_answer(question)
    measured = lesson_steps.experiment_answer(question)
    if explained is not None or measured is not None:
        experiment = lesson_steps.experiment_public(question)
        reveal["lesson"] = {"exercise": question.exercise or None, "options": question.options,
                            "experiment": experiment["kind"] if experiment else None}
    if explained is not None:
        reveal["explanation"] = explained[1]
    if measured is not None:  # kept: measured before the question (the screens say so), not for it
        reveal["experiment"] = {**lesson_steps.experiment_revealed(question), "kept": measured["kept"],
                                "finals": measured["finals"]}
    return reveal


def reveal_shown(session: LiveSession, question: Question) -> None:
    """The revealed question stays on every screen (and an experiment's result in the lesson's panel) until the next
    question, part or demonstration: a screen that joins meanwhile is shown it too."""
    experiment = question.training_run_id is not None or question.experiment_run_id is not None
    services.session_state_update(session=session, revealed=question.pk,
                                  **({"demo": None, "experiment_shown": question.pk} if experiment else {}))


def my_reveal(reveal: dict[str, Any], question: Question, user: Any, drives: bool) -> dict[str, Any]:
    """A revealed question's frame for one screen: the class's scores on the console, the student's own result."""
    if drives:
        return {**reveal, "scores": questions.class_scores(question.session)}
    mine = question.answers.filter(participant__user=user).first()
    return {**reveal, "you": {"answered": mine is not None, "correct": bool(mine and mine.correct),
                              "score": questions.score_of(question.session, user)}}


def snapshot(session: LiveSession, user: Any, drives: bool, relay: SessionRelay, language: str = "en") -> dict[str, Any]:
    """The first frame, the room as it is now (the one source for a screen that joins, reloads or reconnects): the
    session, its views, the lesson part, the demonstration or revealed experiment in the lesson's panel, the question
    on screen (open, or revealed until the next one) with this user's answer, result and score; its words in the
    screen's language."""
    state = session.run_state
    question = questions.open_question(session)
    revealed = None
    if question is None and state.revealed:  # on the screens until the next question opens
        latest = session.questions.order_by("-created_at", "-pk").first()
        revealed = latest if latest is not None and latest.pk == state.revealed else None
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
        snapshot["question"] = wording.question_for(public, language)
        snapshot["my_answer"] = questions.my_answer(question, user)
        if drives:
            counts = questions.live_counts(question.pk)
            snapshot["counts"] = {"question": question.pk, "counts": counts, "total": sum(counts.values())}
    elif revealed is not None:
        snapshot["question"] = wording.question_for(public_question(revealed), language)
        snapshot["my_answer"] = questions.my_answer(revealed, user)
        reveal = wording.reveal_for(my_reveal(reveal_public(revealed), revealed, user, drives), language)
        if reveal.get("experiment") and state.experiment_shown == revealed.pk:
            reveal = lesson_steps.with_html(session, reveal, user, language)  # its result, in the lesson's panel
        elif reveal.get("experiment"):
            reveal = {**reveal, "experiment": {**reveal["experiment"], "off_panel": True}}  # a part or demo since
        snapshot["reveal"] = reveal
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
