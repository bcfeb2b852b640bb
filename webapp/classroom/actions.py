"""What a live session's socket does: one call per frame type (the console's actions, `CONSOLE`; a participant's
answer; a resync), joining and leaving, and what each classroom event becomes on this socket.

The socket (webapp/classroom/consumers.py) parses a frame, calls the one function here with itself (a `Caller`) and
the session, and sends what it answers; a refusal is a ClassroomError, which the socket sends as an `error` frame.
Frames for every screen go out on the session's group (relay.publish) and reach each socket through its relay. The
session's run (start, step, cancel, view, its state, its end) is session_run.py's; the room a screen joins, room.py's.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import redis
from channels.db import database_sync_to_async

from webapp.classroom import plans, questions, room, services, session_run, wording
from webapp.classroom.errors import ClassroomError
from webapp.classroom.experiment_progress import watch_experiment, watch_seed
from webapp.classroom.models import LiveSession, Question, SessionState
from webapp.classroom.presence import presence_change
from webapp.classroom.relay import SessionRelay, publish
from webapp.classroom.reveal import model_answer, next_token_options, source_options
from webapp.classroom.steps import comparisons, demos, exercises, parts, screens, seeds
from webapp.realtime.loops import per_loop

log = logging.getLogger(__name__)

CONSOLE_ACTIONS = ("run", "step", "cancel", "views", "question", "reveal", "close_question", "end", "lesson", "demo",
                   "exercise", "experiment", "plan", "seeds")
COUNTS_EVERY_S = 0.05  # answers arriving together reach the console as one histogram update
STEP_WAIT_S = 5.0  # how long a reveal waits for the worker's step it is about


class Caller(Protocol):
    """What an action needs of the socket its frame came on."""

    code: str
    user: Any
    user_id: int
    session_id: int
    drives: bool
    seated: bool
    relay: SessionRelay
    closing: bool
    language: str  # the screen's (what a lesson step's frames carry is rendered in it)

    async def send(self, text_data: str) -> None: ...

    async def send_error(self, code: str, message: str) -> None: ...


def _db(fn: Any) -> Any:
    return database_sync_to_async(fn, thread_sensitive=False)


# -- joining and leaving ----------------------------------------------------------------------------------------


async def session_open(socket: Caller, scope: dict[str, Any], roles: dict[Any, Any]) -> tuple[LiveSession, bool, bool]:
    """The live session a socket opens on, whether its user drives it and whether they sat in it, read in one thread
    hop; ClassroomError `too_many` (wrong codes are throttled per user and client address, as the join page's are)
    or `not_found`. `roles`: what the socket's handshake read of the user's role."""
    joined = await _db(services.socket_join)(socket.code, socket.user, scope, roles)
    if joined is None:
        raise ClassroomError("not_found", "no live session has this code (it may have ended)")
    return joined


async def relay_join(socket: Caller, session: LiveSession) -> SessionRelay:
    """This process's relay of the session, with the socket among its screens (it holds the open question's step,
    read when the process's first screen of the session joins)."""
    return await session_run.relay_join(socket, session, lambda: _db(room.open_public)(session))


async def presence(socket: Caller, change: int) -> None:
    await presence_change(socket.code, socket.user_id, change, student=not socket.drives)


async def snapshot(socket: Caller, session: LiveSession) -> dict[str, Any]:
    """The `session` frame (docs/classroom-socket.md). A console that joins while the class predicts an experiment
    follows its run again (its last console may have gone with its web process)."""
    def read() -> tuple[dict[str, Any], list[int]]:  # one thread hop
        frame = room.snapshot(session, socket.user, socket.drives, socket.relay, socket.language)
        on_screen = frame["seeds"]["question"] is not None  # seeds added to the comparison on screen
        return frame, seeds.seeds_unannounced(session) if on_screen else []

    frame, unannounced = await _db(read)()
    progress = ((frame.get("question") or {}).get("experiment") or {}).get("progress")
    if socket.drives and progress and progress["status"] not in ("succeeded", "failed"):
        watch_experiment(socket.code, frame["question"]["id"])
    for added_id in unannounced:  # each followed again here
        watch_seed(socket.code, added_id)
    return frame


async def resync(socket: Caller) -> None:
    """The run's `state` again, for a screen that saw a gap (session_run.state_send)."""
    await session_run.state_send(socket, await _live(socket.code))


# -- the console -------------------------------------------------------------------------------------------


async def _live(code: str) -> LiveSession:
    session = await _db(services.session_by_code)(code)
    if session is None or not session.live:
        raise ClassroomError("ended", "this session has ended")
    return session


async def session_driven(socket: Caller) -> LiveSession:
    """The session, read afresh, for a console action: ClassroomError unless it is live and this user drives it
    now (rights are read again at every action)."""
    session = await _live(socket.code)
    if not await _db(room.drives_now)(socket.user_id, session):
        raise ClassroomError("forbidden", "only the session's instructor (or an admin) drives it")
    return session


async def console_run(socket: Caller, session: LiveSession, frame: dict[str, Any]) -> None:
    """A new decode for every screen (session_run.run_start); an open question about the old one closes."""
    await session_run.run_start(socket, session, frame, before=lambda: _questions_off(socket, session))


async def _questions_off(socket: Caller, session: LiveSession) -> None:
    await _db(questions.questions_close)(session=session)
    if socket.relay.held_seq is not None:
        await publish(socket.code, {"type": "question_closed"})


async def console_step(socket: Caller, session: LiveSession, frame: dict[str, Any]) -> None:
    await session_run.run_step(session, socket.relay)


async def console_cancel(socket: Caller, session: LiveSession, frame: dict[str, Any]) -> None:
    if not session.run_state.running:
        raise ClassroomError("not_running", "nothing is running")
    await session_run.run_cancel(session, socket.user_id)
    await _questions_off(socket, session)


async def console_views(socket: Caller, session: LiveSession, frame: dict[str, Any]) -> None:
    start = socket.relay.start_frame() or {}
    views = services.parse_views(frame, (start.get("model_config") or {}).get("n_decoder_layers"))
    state = await _db(services.session_state_update)(session=session, **views)
    await publish(socket.code, {"type": "views", **views})
    ended = await session_run.run_view(state)  # a running run's worker sends its steps in the view itself
    if ended is not None:
        await publish(socket.code, ended)


async def console_question(socket: Caller, session: LiveSession, frame: dict[str, Any]) -> None:
    spec = questions.parse_question(frame)
    request_id, seq, options = None, None, None
    if spec.kind != Question.CHOICE:
        request_id, seq, options = _next_step(socket.relay, session.run_state, spec.kind)
    question = await _db(questions.question_open)(session=session, spec=spec, request_id=request_id, seq=seq,
                                                 options=options)
    public = room.public_question(question)
    if seq is None:
        await publish(socket.code, public)
        return
    # The relays hold this step back before it exists: the step is asked for only once they know.
    await publish(socket.code, public, hold=seq)
    await session_run.run_step(session, socket.relay)


def _next_step(relay: SessionRelay, state: SessionState, kind: str) -> tuple[str, int, list[str]]:
    """The running step-mode request and the seq of its next step, or ClassroomError why there is none."""
    start = relay.start_frame()
    if not state.stepping or relay.ended or start is None or relay.request_id != state.request_id:
        raise ClassroomError("not_stepping", "start a step-by-step decode (Step) before asking about the model's next step")
    if relay.held_seq is not None:
        raise ClassroomError("question_open", "reveal or close the open question first")
    src = start.get("src_tokens") or [str(i) for i in start.get("src_ids", [])]
    options = {"attention": source_options(src), "stop": ["yes", "no"]}.get(kind, [])
    return relay.request_id, relay.steps_seen, options


async def console_reveal(socket: Caller, session: LiveSession, frame: dict[str, Any]) -> None:
    question = await _db(questions.open_question)(session)
    if question is None:
        raise ClassroomError("not_open", "no question is open")
    options, explained = question.options, exercises.exercise_answer(question)
    measured = await _db(comparisons.experiment_answer)(question)
    if explained is not None:  # a lesson exercise: its own right option
        answer = explained[0]
    elif measured is not None:  # a training comparison: the arm that ended lowest
        answer = measured["answer"]
    elif question.kind == Question.CHOICE:  # the instructor's own: the option they name
        answer = frame.get("answer")
        if answer not in question.options:
            raise ClassroomError("bad_params", "name the right option (answer) to reveal a multiple-choice question")
    else:
        step = await _held_step(socket.relay, question)
        start = socket.relay.start_frame() or {}
        if step is None:
            raise ClassroomError("not_stepped", "the step this question is about has not arrived yet")
        answer = model_answer(question, step, start.get("src_tokens") or [])
        if question.kind == Question.NEXT_TOKEN:
            options = next_token_options(step)
    if answer is None:
        raise ClassroomError("no_answer", "the model's frame does not carry what this question asks")
    results = await _db(room.reveal_store)(question, answer, options)
    reveal = await _db(room.reveal_public)(question, (explained, measured))
    await _db(room.reveal_shown)(session, question)
    await publish(socket.code, reveal, results={str(uid): list(r) for uid, r in results.items()})
    if measured is not None and measured.get("verdict") is not None:  # a comparison over seeds: students may add
        await publish(socket.code, await _db(seeds.seeds_counts)(session))


async def _held_step(relay: SessionRelay, question: Question) -> dict[str, Any] | None:
    """The step the question is about; a reveal pressed as the question opened waits for it a moment."""
    for _ in range(int(STEP_WAIT_S / 0.05)):
        step = relay.frame(question.request_id, question.seq)
        if step is not None:
            return step
        await asyncio.sleep(0.05)
    return None


async def console_close_question(socket: Caller, session: LiveSession, frame: dict[str, Any]) -> None:
    if await _db(questions.questions_close)(session=session) == 0:
        raise ClassroomError("not_open", "no question is open")
    await publish(socket.code, {"type": "question_closed"})


async def console_end(socket: Caller, session: LiveSession, frame: dict[str, Any]) -> None:
    """As the console page's End: the session ends, then a running decode is cancelled and kept from its worker's copy
    (every screen's socket closes with the end, none is left to keep it), its history saying the end stopped it; the
    screens are told who ended the session."""
    ended = await _db(session_run.session_end_keeping_run)(session=session)  # ends it, then cancels its decode
    await publish(socket.code, {"type": "ended", "reason": ended.end_reason})


async def console_lesson(socket: Caller, session: LiveSession, frame: dict[str, Any]) -> None:
    """A lesson page's part on every screen (steps/parts.py)."""
    lesson = await _db(parts.lesson_show)(session=session, frame=frame)
    await publish(socket.code, parts.lesson_frame(lesson))


async def console_demo(socket: Caller, session: LiveSession, frame: dict[str, Any]) -> None:
    """A demonstration run once for the class: every screen is told it is computing, then draws its result (or the
    console hears why it was refused, and the screens that it was)."""
    await publish(socket.code, {"type": "demo_running", "kind": frame.get("kind")})
    try:
        demo = await _db(demos.demo_for_class)(session=session, user=socket.user, frame=frame)
    except ClassroomError:
        await publish(socket.code, {"type": "demo_refused", "kind": frame.get("kind")})
        raise
    # The result travels once to each web process, which renders it once per language for its screens.
    await publish(socket.code, demos.demo_frame(session, demo),
                  demo={k: demo[k] for k in ("kind", "result", "cached")})


async def console_exercise(socket: Caller, session: LiveSession, frame: dict[str, Any]) -> None:
    """A lesson exercise asked as a multiple-choice question; the reveal names its right option and explains it."""
    question = await _db(exercises.exercise_ask)(session=session, frame=frame)
    await publish(socket.code, await _db(room.public_question)(question))


async def console_experiment(socket: Caller, session: LiveSession, frame: dict[str, Any]) -> None:
    """The class predicts a lesson training comparison's outcome; its result is the reveal."""
    question = await _db(comparisons.experiment_ask)(session=session, user=socket.user, frame=frame)
    await publish(socket.code, await _db(room.public_question)(question))
    watch_experiment(socket.code, question.pk)


async def console_plan(socket: Caller, session: LiveSession, frame: dict[str, Any]) -> None:
    """The lesson plan the console steps through (the steps' frames come as the console's own)."""
    await _db(plans.plan_choose)(session=session, user=socket.user, frame=frame)


async def console_seeds(socket: Caller, session: LiveSession, frame: dict[str, Any]) -> None:
    """Close (`"open": false`) or reopen adding seeds to a revealed comparison; every screen hears (`seeds`)."""
    session = await _db(seeds.seeds_window)(session=session, frame=frame)
    await publish(socket.code, await _db(seeds.seeds_counts)(session))


# -- participants ------------------------------------------------------------------------------------------


async def answer(socket: Caller, frame: dict[str, Any]) -> dict[str, Any]:
    """A participant's answer, taken once (questions.answer_take); returns the `answered` frame for them."""
    if not socket.seated:
        raise ClassroomError("forbidden", "only the session's participants answer its questions")
    try:
        question, choice = await questions.answer_take(session_id=socket.session_id, user_id=socket.user_id,
                                                       question_id=frame.get("question"), choice=frame.get("choice"))
    except (redis.RedisError, OSError) as error:
        log.warning("an answer could not be counted", exc_info=True)
        raise ClassroomError("unavailable", "your answer could not be counted just now; send it again") from error
    coalescer().counts_soon(socket.code, question)
    return {"type": "answered", "question": question, "choice": choice}


async def add_seed(socket: Caller, frame: dict[str, Any]) -> dict[str, Any]:
    """A participant's `add_seed`: one more seed of the revealed comparison, on the experiments queue on their quota
    (steps/seeds.py); returns the `seed_queued` frame for them. Every screen hears the counts now and gets the curves
    when the seed ends."""
    if not socket.seated:
        raise ClassroomError("forbidden", "only the session's participants add seeds")
    extra = sorted(set(frame) - {"type", "question"})
    if extra:
        raise ClassroomError("bad_params", f"unknown field {extra[0][:40]!r}")
    added, counts = await _db(seeds.seed_add)(session_id=socket.session_id, user=socket.user,
                                              question_id=frame.get("question"))
    watch_seed(socket.code, added.pk)
    await publish(socket.code, counts)
    return {"type": "seed_queued", "question": added.question_id, "seed": added.seed, "status": added.run.status}


class Coalescer:
    """One per event loop: at most one console histogram update per question every COUNTS_EVERY_S."""

    def __init__(self) -> None:
        self.pending: set[int] = set()

    def counts_soon(self, code: str, question_id: int) -> None:
        if question_id in self.pending:
            return
        self.pending.add(question_id)
        asyncio.get_running_loop().call_later(
            COUNTS_EVERY_S, lambda: asyncio.ensure_future(self._send(code, question_id)))

    async def _send(self, code: str, question_id: int) -> None:
        self.pending.discard(question_id)
        counts = await _db(questions.live_counts)(question_id)
        frame = {"type": "answers", "question": question_id, "counts": counts, "total": sum(counts.values())}
        await publish(code, frame, to="console")


coalescer = per_loop(Coalescer)


# -- a classroom event, as this socket shows it ------------------------------------------------------------


async def event_frame(socket: Caller, message: dict[str, Any]) -> dict[str, Any] | None:
    """What a classroom event (relay.py) shows on this socket: None when it is not for this socket's role; a
    reveal carries the console's class scores or this student's result, presence no names for a student."""
    to, frame = message.get("to", "all"), message["frame"]
    if (to == "console" and not socket.drives) or (to == "students" and socket.drives):
        return None
    kind = frame.get("type")
    if kind == "question":  # the lesson's words in this screen's language (built once per language: wording.py)
        frame = wording.question_for(frame, socket.language)
    elif kind == "reveal":
        frame = wording.reveal_for(frame, socket.language)
        if socket.drives:
            frame = {**frame, "scores": await _db(room.scores_of_class)(socket.code)}
        else:
            right, score = message.get("results", {}).get(str(socket.user_id), (None, None))
            frame = {**frame, "you": {"answered": right is not None, "correct": right, "score": score}}
            if score is None:
                frame["you"]["score"] = await _db(room.score_of_user)(socket.code, socket.user_id)
    elif kind == "seed_added":  # the verdict over every seed in this screen's words
        frame = wording.reveal_for(frame, socket.language)
    elif kind == "presence" and not socket.drives:
        frame = {"type": "presence", "count": frame.get("count", 0)}
    key = screens.html_key(socket.code, frame, socket.language)
    if key is not None:  # what the screen shows of a lesson step, rendered once per language in this process
        text = screens.html_kept(key) or await _db(screens.html_render)(key, socket.user, message.get("demo"))
        frame = {**frame, "html": text}
    return frame


# The console's actions: each frame type the console sends, and the one function that does it.
CONSOLE: dict[str, Callable[[Caller, LiveSession, dict[str, Any]], Awaitable[None]]] = {
    "run": console_run, "step": console_step, "cancel": console_cancel, "views": console_views,
    "question": console_question, "reveal": console_reveal, "close_question": console_close_question,
    "end": console_end, "lesson": console_lesson, "demo": console_demo, "exercise": console_exercise,
    "experiment": console_experiment, "plan": console_plan, "seeds": console_seeds,
}
