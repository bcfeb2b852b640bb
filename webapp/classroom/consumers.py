"""`/ws/classroom/<code>/`: the instructor drives the session, every participant's screen follows.

Console frames (run, step, cancel, views, question, reveal, close_question, end) are checked at
each action: only the session's instructor and admins drive it. Participants answer and resync.
Decode frames reach every socket through the process's SessionRelay (webapp/classroom/relay.py).
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import orjson
import redis
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from webapp.classroom import history, questions, services
from webapp.classroom import socket_state as stored
from webapp.classroom.errors import ClassroomError
from webapp.classroom.frames import parse_run
from webapp.classroom.models import LiveSession, Question
from webapp.classroom.presence import presence_change
from webapp.classroom.relay import SessionRelay, event_message, relay_target, relays, session_group
from webapp.classroom.reveal import model_answer, next_token_options, source_options
from webapp.core.loops import per_loop
from webapp.core.sockets import JsonSocket
from webapp.playground.handoff import handoff
from webapp.playground.protocol import LOST_MESSAGES, ProtocolError, parse_view_fields
from webapp.playground.relay import WATCH_EVERY_S, no_interactive_worker
from webapp.playground.services import (
    attention_view,
    decode_cancel,
    decode_step,
    ended_attention,
    new_job,
    request_resync,
)

log = logging.getLogger(__name__)

CONSOLE_ACTIONS = ("run", "step", "cancel", "views", "question", "reveal", "close_question", "end")
COUNTS_EVERY_S = 0.05  # answers arriving together reach the console as one histogram update
STEP_WAIT_S = 5.0  # how long a reveal waits for the worker's step it is about


def _db(fn: Any) -> Any:
    return database_sync_to_async(fn, thread_sensitive=False)


def _redis(fn: Any) -> Any:
    return sync_to_async(fn, thread_sensitive=False)


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
        await get_channel_layer().group_send(session_group(code), event_message(frame, to="console"))


coalescer = per_loop(Coalescer)


def lost_frame(request_id: str, code: str) -> dict[str, Any]:
    return {"type": "error", "code": code, "request_id": request_id, "message": LOST_MESSAGES[code]}


def watch_run(relay: SessionRelay, request_id: str) -> None:
    """Watch this run for this process's sockets (one watch per relay), whether or not a console here watches it."""
    watching = relay.lost_watch
    if watching is None or watching[0] != request_id or watching[1].done():  # an older run's watch ends by itself
        relay.lost_watch = (request_id, asyncio.ensure_future(_watch_unheard(relay, relay.code, request_id)))


async def _watch_unheard(relay: SessionRelay, code: str, request_id: str) -> None:
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
            await _send_state_to(list(dict.fromkeys([*waiting, *([] if relay.ended else relay.sockets)])), request_id)
            return
        if await stored.run_lost(relay, request_id, lost_frame(request_id, "worker_lost")):
            await get_channel_layer().group_send(session_group(code),
                                                 event_message(lost_frame(request_id, "worker_lost")))
        waiting, relay.waiting = relay.waiting, []
        await _send_state_to(waiting, request_id)
        return


async def _send_state_to(sockets: list[Any], request_id: str) -> None:
    """The ended run's state to these sockets (a socket closing meanwhile is skipped)."""
    if not sockets:
        return
    text = await stored.ended_state_text(request_id)
    for socket in sockets:
        try:
            await socket.send(text_data=text)
        except Exception:  # a socket closing meanwhile: the others still get it
            log.debug("state to a closing socket dropped", exc_info=True)


class ClassroomSocket(JsonSocket):
    frame_types = (*CONSOLE_ACTIONS, "answer", "resync")

    async def on_connect(self) -> None:
        self.code = self.scope["url_route"]["kwargs"]["code"]
        user = self.scope["user"]
        self.user_id = user.pk
        try:  # wrong codes are throttled per user and client address, as the join page's are
            session = await _db(services.session_for_socket)(self.code, user.pk, self.scope)
        except services.JoinThrottled as refusal:
            await self.send_error(refusal.code, refusal.message)
            await self.close(code=4429)
            return
        if session is None or not session.live:
            await self.send_error("not_found", "no live session has this code (it may have ended)")
            await self.close(code=4404)
            return
        self.session_id = session.pk
        self.drives = await _db(services.can_drive)(user, session)
        self.seated = not self.drives and await _db(services.session_join)(user=user, session=session) is not None
        self._before_snapshot: list[str] | None = []  # what the relay hands this socket before its `session` frame
        self.relay: SessionRelay = await relays().join(
            self, self.code, request_id=session.run_state.request_id, question=await _db(stored.open_public)(session),
            on_final=stored.run_record, on_run=watch_run, on_gap=stored.run_gap)
        await self._load_ended(session)
        self.present = True
        await presence_change(self.code, self.user_id, +1, student=not self.drives)
        snapshot = await _db(stored.snapshot)(session, user, self.drives, self.relay)
        held, self._before_snapshot = self._before_snapshot, None
        await self.send_json(snapshot)  # the `session` frame first (docs/classroom-socket.md), then what came meanwhile
        for text in held:
            await self.send(text_data=text)
        await self._send_state(session)

    async def send(self, text_data: str | None = None, bytes_data: bytes | None = None, close: bool = False) -> None:
        held = getattr(self, "_before_snapshot", None)
        if held is not None and text_data is not None and not close:
            held.append(text_data)  # an event of the session (presence, a question) before this socket's snapshot
            return
        await super().send(text_data=text_data, bytes_data=bytes_data, close=close)

    async def disconnect(self, code: int) -> None:
        if getattr(self, "relay", None) is not None:
            await relays().leave(self, self.code)
        if getattr(self, "present", False):
            self.present = False
            try:
                await presence_change(self.code, self.user_id, -1, student=not self.drives)
            except Exception:  # Redis away: the count corrects itself when the socket comes back
                log.warning("could not record a participant leaving", exc_info=True)

    # -- state for a socket that joins, reconnects or saw a gap -----------------------------------

    async def _send_state(self, session: LiveSession) -> None:
        state = session.run_state
        request_id = state.request_id
        if not request_id:
            return
        relay = self.relay
        running = state.running
        if running:
            watch_run(relay, request_id)
        else:
            await self._load_ended(session)
        if relay.request_id == request_id and relay.complete:
            await self.send(text_data=relay.state_text())
            return
        if relay.request_id == request_id and relay.ended:  # ended here before this copy was whole: the worker's copy
            relay.waiting.append(self)
            await stored.run_gap(relay, request_id, True)
            return
        if running:
            relay.waiting.append(self)
            await _redis(request_resync)(request_id)
            return
        await self.send(text_data=await stored.ended_state_text(request_id))

    async def _load_ended(self, session: LiveSession) -> None:
        """A run that ended before this process followed it: its kept transcript goes to the relay, which holds back
        an open question's step from it (and finds the model's top-k there for the question's options)."""
        state, relay = session.run_state, self.relay
        request_id = state.request_id
        if request_id and not state.running and relay.request_id == request_id and not relay.complete:
            frames = orjson.loads(await stored.ended_state_text(request_id))["frames"]
            if frames:
                relay.load_ended(request_id, frames)

    async def on_resync(self, frame: dict[str, Any]) -> None:
        await self.paced_resync(self._resync_now)  # a full state frame at most once an interval (JsonSocket)

    async def _resync_now(self) -> None:
        session = await self._session()
        if session is not None:
            await self._send_state(session)

    # -- the console ------------------------------------------------------------------------------

    async def _session(self) -> LiveSession | None:
        session = await _db(services.session_by_code)(self.code)
        if session is None or not session.live:
            await self.send_error("ended", "this session has ended")
            return None
        return session

    async def on_frame(self, kind: str, frame: dict[str, Any]) -> None:
        """A console action goes to its `console_<type>` with the session, once this user may drive it now (rights
        are read afresh at every action); the rest (answer, resync) to their `on_<type>`."""
        if kind not in CONSOLE_ACTIONS:
            await super().on_frame(kind, frame)
            return
        session = await self._session()
        if session is None:
            return
        if not await _db(stored.drives_now)(self.user_id, session):
            await self.send_error("forbidden", "only the session's instructor (or an admin) drives it")
            return
        await getattr(self, f"console_{kind}")(session, frame)

    async def _publish(self, frame: dict[str, Any], **extra: Any) -> None:
        await get_channel_layer().group_send(session_group(self.code), event_message(frame, **extra))

    async def console_run(self, session: LiveSession, frame: dict[str, Any]) -> None:
        try:
            model_name, request = parse_run(frame, session.model_name, session.run_state.attention_view())
            model = await _db(services.session_model_fields)(user=self.scope["user"], name=model_name)
        except (ClassroomError, ProtocolError) as error:
            await self.send_error(error.code, error.message)
            return
        await self._cancel_running(session)
        job = new_job(user_id=self.user_id, reply_channel=f"classroom.{self.code}", request=request, model=model,
                      relay=relay_target(self.code))
        state = {"source": request.source, "params": {**request.params, "step_mode": request.step_mode,
                                                      "pace_ms": request.pace_ms},
                 "request_id": job["request_id"], "running": True, "tokens": [], "driver": self.user_id}
        await _db(stored.run_begin)(session, model_name, state, job["request_id"])
        try:
            refusal = await handoff().send(job)
        except Exception:
            log.exception("could not queue the classroom decode %s", job["request_id"])
            refusal = ProtocolError("unavailable", "the decoding service cannot be reached; try again in a moment")
        if refusal is not None:
            await _db(services.session_state_update)(session=session, running=False)
            await self.send_error(refusal.code, refusal.message)
            return
        asyncio.ensure_future(self._watch(job["request_id"]))
        # What the students' Fork opens: the worker's frames carry the source's tokens, not its text.
        await self._publish({"type": "run", "model": model_name, "source": request.source,
                             "params": {"strategy": request.params.get("strategy", "greedy")}})

    async def _watch(self, request_id: str) -> None:
        """No frame within PLAYGROUND_QUEUE_WAIT_S, or no interactive worker alive any more: no worker took the run
        (`no_worker`, to the console). Once its first frame arrives, watch_run (every web process whose screens
        follow it) ends it with `worker_lost` if its worker goes silent."""
        waited = 0.0
        while self.relay.request_id != request_id:
            if waited >= settings.PLAYGROUND_QUEUE_WAIT_S or await no_interactive_worker():
                if await self._end_lost(request_id, "no_worker"):
                    await self.send_error("no_worker", "no decoding worker took this run in time; try again in a minute")
                return
            await asyncio.sleep(WATCH_EVERY_S)
            waited += WATCH_EVERY_S

    async def _end_lost(self, request_id: str, code: str) -> bool:
        """Stop a run no worker is answering for and mark the session idle; False when it is no longer the run."""
        if getattr(self, "closing", False):
            return False
        return await stored.run_lost(self.relay, request_id, lost_frame(request_id, code))

    async def _cancel_running(self, session: LiveSession) -> None:
        state = session.run_state
        if state.running_request:
            await _redis(decode_cancel)(user_id=state.driver or self.user_id, request_ids=[state.running_request])
        await _db(questions.questions_close)(session=session)
        if self.relay.held_seq is not None:
            await self._publish({"type": "question_closed"})

    async def console_step(self, session: LiveSession, frame: dict[str, Any]) -> None:
        state = session.run_state
        ended_here = self.relay.ended and self.relay.request_id == state.request_id
        if not state.stepping or ended_here:
            await self.send_error("not_stepping", "no step-by-step decode is running: press Step to start one")
            return
        await _redis(decode_step)(request_ids=[state.request_id])

    async def console_cancel(self, session: LiveSession, frame: dict[str, Any]) -> None:
        if not session.run_state.running:
            await self.send_error("not_running", "nothing is running")
            return
        await self._cancel_running(session)

    async def console_views(self, session: LiveSession, frame: dict[str, Any]) -> None:
        start = self.relay.start_frame() or {}
        layers = (start.get("model_config") or {}).get("n_decoder_layers")
        try:
            views = services.parse_views(frame, layers)
        except ClassroomError as error:
            await self.send_error(error.code, error.message)
            return
        state = await _db(services.session_state_update)(session=session, **views)
        await self._publish({"type": "views", **views})
        request_id = state.request_id
        if not request_id:
            return
        view = parse_view_fields(state.attention_view())
        if state.running:  # the worker sends every step so far in this view; later steps follow it
            await _redis(attention_view)(request_id, view)
            return
        text = await _redis(ended_attention)(request_id, view)
        if text is not None:
            await self._publish(orjson.loads(text))

    async def console_question(self, session: LiveSession, frame: dict[str, Any]) -> None:
        try:
            spec = questions.parse_question(frame)
            request_id, seq, options = None, None, None
            if spec.kind != Question.CHOICE:
                request_id, seq, options = self._next_step(session, spec.kind)
            question = await _db(questions.question_open)(session=session, spec=spec, request_id=request_id, seq=seq,
                                                         options=options)
        except ClassroomError as error:
            await self.send_error(error.code, error.message)
            return
        public = stored.public_question(question)
        if seq is None:
            await self._publish(public)
            return
        # The relays hold this step back before it exists: the step is asked for only once they know.
        await self._publish(public, hold=seq)
        await _redis(decode_step)(request_ids=[request_id])

    def _next_step(self, session: LiveSession, kind: str) -> tuple[str, int, list[str]]:
        """The running step-mode request and the seq of its next step, or ClassroomError why there is none."""
        state, relay = session.run_state, self.relay
        start = relay.start_frame()
        if not state.stepping or relay.ended or start is None or relay.request_id != state.request_id:
            raise ClassroomError("not_stepping",
                                 "start a step-by-step decode (Step) before asking about the model's next step")
        if relay.held_seq is not None:
            raise ClassroomError("question_open", "reveal or close the open question first")
        seq = relay.steps_seen
        src = start.get("src_tokens") or [str(i) for i in start.get("src_ids", [])]
        options = {"attention": source_options(src), "stop": ["yes", "no"]}.get(kind, [])
        return state.request_id, seq, options

    async def console_reveal(self, session: LiveSession, frame: dict[str, Any]) -> None:
        question = await _db(questions.open_question)(session)
        if question is None:
            await self.send_error("not_open", "no question is open")
            return
        options = question.options
        if question.kind == Question.CHOICE:
            answer = frame.get("answer")
            if answer not in question.options:
                await self.send_error("bad_params", "name the right option (answer) to reveal a multiple-choice question")
                return
        else:
            step = await self._held_step(question)
            start = self.relay.start_frame() or {}
            if step is None:
                await self.send_error("not_stepped", "the step this question is about has not arrived yet")
                return
            answer = model_answer(question, step, start.get("src_tokens") or [])
            if question.kind == Question.NEXT_TOKEN:
                options = next_token_options(step)
        if answer is None:
            await self.send_error("no_answer", "the model's frame does not carry what this question asks")
            return
        results = await _db(stored.reveal_store)(question, answer, options)
        counts = await _db(questions.answer_counts)(question)
        reveal = {"type": "reveal", "question": question.pk, "kind": question.kind, "answer": answer,
                  "counts": counts, "total": sum(counts.values())}
        await self._publish(reveal, results={str(uid): list(r) for uid, r in results.items()})

    async def _held_step(self, question: Question) -> dict[str, Any] | None:
        """The step the question is about; a reveal pressed as the question opened waits for it a moment."""
        for _ in range(int(STEP_WAIT_S / 0.05)):
            step = self.relay.frame(question.request_id, question.seq)
            if step is not None:
                return step
            await asyncio.sleep(0.05)
        return None

    async def console_close_question(self, session: LiveSession, frame: dict[str, Any]) -> None:
        if await _db(questions.questions_close)(session=session) == 0:
            await self.send_error("not_open", "no question is open")
            return
        await self._publish({"type": "question_closed"})

    async def console_end(self, session: LiveSession, frame: dict[str, Any]) -> None:
        """As the console page's End: a running decode is cancelled and kept from its worker's copy (every screen's
        socket closes with the end, none is left to keep it), and the screens are told who ended the session."""
        await self._cancel_running(session)
        ended = await _db(history.session_end_keeping_runs)(session=session)
        await self._publish({"type": "ended", "reason": ended.end_reason})

    # -- participants -----------------------------------------------------------------------------

    async def on_answer(self, frame: dict[str, Any]) -> None:
        if not self.seated:
            await self.send_error("forbidden", "only the session's participants answer its questions")
            return
        try:
            question, choice = await questions.answer_take(session_id=self.session_id, user_id=self.user_id,
                                                           question_id=frame.get("question"), choice=frame.get("choice"))
        except ClassroomError as error:
            await self.send_error(error.code, error.message)
            return
        except (redis.RedisError, OSError):
            log.warning("an answer could not be counted", exc_info=True)
            await self.send_error("unavailable", "your answer could not be counted just now; send it again")
            return
        await self.send_json({"type": "answered", "question": question, "choice": choice})
        coalescer().counts_soon(self.code, question)

    # -- from the relay ---------------------------------------------------------------------------

    async def classroom_event(self, message: dict[str, Any]) -> None:
        to, frame = message.get("to", "all"), message["frame"]
        if (to == "console" and not self.drives) or (to == "students" and self.drives):
            return
        kind = frame.get("type")
        if kind == "reveal":
            if self.drives:
                frame = {**frame, "scores": await _db(stored.scores_of_class)(self.code)}
            else:
                right, score = message.get("results", {}).get(str(self.user_id), (None, None))
                frame = {**frame, "you": {"answered": right is not None, "correct": right, "score": score}}
                if score is None:
                    frame["you"]["score"] = await _db(stored.score_of_user)(self.code, self.user_id)
        elif kind == "presence" and not self.drives:
            frame = {"type": "presence", "count": frame.get("count", 0)}
        await self.send(text_data=orjson.dumps(frame).decode())
        if kind == "ended":
            await self.close(code=4404)
