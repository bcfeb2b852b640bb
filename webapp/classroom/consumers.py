"""`/ws/classroom/<code>/`: the instructor drives the session, every participant's screen follows.

Console frames (run, step, cancel, views, question, reveal, close_question, end) are checked at
each action: only the session's instructor and admins drive it. Participants answer and resync.
Decode frames reach every socket through the process's SessionRelay (webapp/classroom/relay.py).
"""
from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import orjson
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from webapp.classroom import services
from webapp.classroom.models import LiveSession, Question
from webapp.classroom.presence import presence_change
from webapp.classroom.relay import SessionRelay, event_message, relay_target, relays, session_group
from webapp.classroom.reveal import model_answer, next_token_options, source_options
from webapp.classroom.services import ClassroomError
from webapp.core.loops import per_loop
from webapp.core.sockets import JsonSocket
from webapp.playground.handoff import handoff
from webapp.playground.protocol import ProtocolError
from webapp.playground.services import (
    decode_cancel,
    decode_request,
    decode_step,
    ended_state,
    new_job,
    playground_redis,
    request_resync,
)

log = logging.getLogger(__name__)

CONSOLE_ACTIONS = ("run", "step", "cancel", "views", "question", "reveal", "close_question", "end")
RUN_KEYS = ("source", "strategy", "beam_size", "temperature", "top_k", "top_p", "seed", "max_len", "min_len",
            "pace_ms", "step_mode")
COUNTS_EVERY_S = 0.05  # answers arriving together reach the console as one histogram update
SAVED_TTL_S = 3600
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
        counts = await _db(services.live_counts)(question_id)
        frame = {"type": "answers", "question": question_id, "counts": counts, "total": sum(counts.values())}
        await get_channel_layer().group_send(session_group(code), event_message(frame, to="console"))


coalescer = per_loop(Coalescer)


class ClassroomSocket(JsonSocket):
    frame_types = (*CONSOLE_ACTIONS, "answer", "resync")

    async def on_connect(self) -> None:
        self.code = self.scope["url_route"]["kwargs"]["code"]
        user = self.scope["user"]
        self.user_id = user.pk
        session = await _db(services.session_by_code)(self.code)
        if session is None or not session.live:
            await self.send_error("not_found", "no live session has this code (it may have ended)")
            await self.close(code=4404)
            return
        self.session_id = session.pk
        self.drives = await _db(services.can_drive)(user, session)
        self.seated = not self.drives and await _db(services.session_join)(user=user, session=session) is not None
        self.relay: SessionRelay = await relays().join(
            self, self.code, request_id=session.state.get("request_id"), question=await _db(_open_public)(session),
            on_final=_record_run)
        self.present = True
        await presence_change(self.code, self.user_id, +1, student=not self.drives)
        await self.send_json(await _db(_snapshot)(session, user, self.drives, self.relay))
        await self._send_state(session)

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
        request_id = session.state.get("request_id")
        if not request_id:
            return
        relay = self.relay
        if relay.request_id == request_id and relay.complete:
            await self.send(text_data=relay.state_text())
            return
        if session.state.get("running"):
            relay.waiting.append(self)
            await _redis(request_resync)(request_id)
            return
        frames = await _db(services.run_frames)(request_id)
        if frames is None:
            text = await _redis(ended_state)(request_id)
            frames = json.loads(text)["frames"] if text else []
        await self.send_json({"type": "state", "request_id": request_id, "frames": frames})

    async def on_resync(self, frame: dict[str, Any]) -> None:
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

    async def _driven(self) -> LiveSession | None:
        """The session, when this user may drive it now (rights are read afresh); else an error frame."""
        session = await self._session()
        if session is None:
            return None
        if not await _db(_drives_now)(self.user_id, session):
            await self.send_error("forbidden", "only the session's instructor (or an admin) drives it")
            return None
        return session

    async def _publish(self, frame: dict[str, Any], **extra: Any) -> None:
        await get_channel_layer().group_send(session_group(self.code), event_message(frame, **extra))

    async def on_run(self, frame: dict[str, Any]) -> None:
        session = await self._driven()
        if session is None:
            return
        try:
            model_name = frame.get("model", session.model_name)
            if not isinstance(model_name, str):
                raise ClassroomError("bad_params", "model must be a model's name")
            model = await _db(services.session_model_fields)(user=self.scope["user"], name=model_name)
            extra = {k: v for k, v in frame.items() if k not in ("type", "model")}
            unknown = sorted(set(extra) - set(RUN_KEYS))
            if unknown:
                raise ClassroomError("bad_params", f"unknown field {unknown[0][:40]!r}")
            request = decode_request({"type": "decode", "model": model_name, "attention": True,
                                      "top_alternatives": 8, **extra})
        except (ClassroomError, ProtocolError) as error:
            await self.send_error(error.code, error.message)
            return
        await self._cancel_running(session)
        job = new_job(user_id=self.user_id, reply_channel=f"classroom.{self.code}", request=request, model=model,
                      relay=relay_target(self.code))
        state = {"source": request.source, "params": {**request.params, "step_mode": request.step_mode,
                                                      "pace_ms": request.pace_ms},
                 "request_id": job["request_id"], "running": True, "tokens": [], "driver": self.user_id}
        await _db(_begin_run)(session, model_name, state, job["request_id"])
        try:
            refusal = await handoff().send(job)
        except Exception:
            log.exception("could not queue the classroom decode %s", job["request_id"])
            refusal = ProtocolError("unavailable", "the decoding service cannot be reached; try again in a moment")
        if refusal is not None:
            await _db(services.session_state_update)(session=session, running=False)
            await self.send_error(refusal.code, refusal.message)

    async def _cancel_running(self, session: LiveSession) -> None:
        state = session.state
        if state.get("running") and state.get("request_id"):
            await _redis(decode_cancel)(user_id=state.get("driver") or self.user_id, request_ids=[state["request_id"]])
        await _db(services.questions_close)(session=session)
        if self.relay.held_seq is not None:
            await self._publish({"type": "question_closed"})

    async def on_step(self, frame: dict[str, Any]) -> None:
        session = await self._driven()
        if session is None:
            return
        state = session.state
        if not (state.get("running") and state.get("params", {}).get("step_mode")) or self.relay.ended:
            await self.send_error("not_stepping", "no step-by-step decode is running: press Step to start one")
            return
        await _redis(decode_step)(request_ids=[state["request_id"]])

    async def on_cancel(self, frame: dict[str, Any]) -> None:
        session = await self._driven()
        if session is None:
            return
        if not session.state.get("running"):
            await self.send_error("not_running", "nothing is running")
            return
        await self._cancel_running(session)

    async def on_views(self, frame: dict[str, Any]) -> None:
        session = await self._driven()
        if session is None:
            return
        start = self.relay.start_frame() or {}
        layers = (start.get("model_config") or {}).get("n_decoder_layers")
        try:
            views = services.parse_views(frame, layers)
        except ClassroomError as error:
            await self.send_error(error.code, error.message)
            return
        await _db(services.session_state_update)(session=session, **views)
        await self._publish({"type": "views", **views})

    async def on_question(self, frame: dict[str, Any]) -> None:
        session = await self._driven()
        if session is None:
            return
        try:
            spec = services.parse_question(frame)
            request_id, seq, options = None, None, None
            if spec.kind != Question.CHOICE:
                request_id, seq, options = self._next_step(session, spec.kind)
            question = await _db(services.question_open)(session=session, spec=spec, request_id=request_id, seq=seq,
                                                         options=options)
        except ClassroomError as error:
            await self.send_error(error.code, error.message)
            return
        public = _public_question(question)
        if seq is None:
            await self._publish(public)
            return
        # The relays hold this step back before it exists: the step is asked for only once they know.
        await self._publish(public, hold=seq)
        await _redis(decode_step)(request_ids=[request_id])

    def _next_step(self, session: LiveSession, kind: str) -> tuple[str, int, list[str]]:
        """The running step-mode request and the seq of its next step, or ClassroomError why there is none."""
        state, relay = session.state, self.relay
        start = relay.start_frame()
        stepping = state.get("running") and state.get("params", {}).get("step_mode")
        if not stepping or relay.ended or start is None or relay.request_id != state.get("request_id"):
            raise ClassroomError("not_stepping",
                                 "start a step-by-step decode (Step) before asking about the model's next step")
        if relay.held_seq is not None:
            raise ClassroomError("question_open", "reveal or close the open question first")
        seq = sum(1 for text in relay.frames if text.startswith(('{"type":"token"', '{"type":"beams"')))
        src = start.get("src_tokens") or [str(i) for i in start.get("src_ids", [])]
        options = {"attention": source_options(src), "stop": ["yes", "no"]}.get(kind, [])
        return state["request_id"], seq, options

    async def on_reveal(self, frame: dict[str, Any]) -> None:
        session = await self._driven()
        if session is None:
            return
        question = await _db(services.open_question)(session)
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
        results = await _db(_reveal)(question, answer, options)
        counts = await _db(services.answer_counts)(question)
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

    async def on_close_question(self, frame: dict[str, Any]) -> None:
        session = await self._driven()
        if session is None:
            return
        if await _db(services.questions_close)(session=session) == 0:
            await self.send_error("not_open", "no question is open")
            return
        await self._publish({"type": "question_closed"})

    async def on_end(self, frame: dict[str, Any]) -> None:
        session = await self._driven()
        if session is None:
            return
        await self._cancel_running(session)
        await _db(services.session_end)(session=session)
        await self._publish({"type": "ended"})

    # -- participants -----------------------------------------------------------------------------

    async def on_answer(self, frame: dict[str, Any]) -> None:
        if not self.seated:
            await self.send_error("forbidden", "only the session's participants answer its questions")
            return
        question = frame.get("question")
        try:
            choice = await _db(services.answer_submit)(session_id=self.session_id, user_id=self.user_id,
                                                      question_id=question, choice=frame.get("choice"))
        except ClassroomError as error:
            await self.send_error(error.code, error.message)
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
                frame = {**frame, "scores": await _db(_scores)(self.code)}
            else:
                right, score = message.get("results", {}).get(str(self.user_id), (None, None))
                frame = {**frame, "you": {"answered": right is not None, "correct": right, "score": score}}
                if score is None:
                    frame["you"]["score"] = await _db(_score)(self.code, self.user_id)
        elif kind == "presence" and not self.drives:
            frame = {"type": "presence", "count": frame.get("count", 0)}
        await self.send(text_data=orjson.dumps(frame).decode())
        if kind == "ended":
            await self.close(code=4404)


# -- database helpers (run in threads) -------------------------------------------------------------


def _drives_now(user_id: int, session: LiveSession) -> bool:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.filter(pk=user_id, is_active=True).first()
    return user is not None and services.can_drive(user, session)


def _open_public(session: LiveSession) -> dict[str, Any] | None:
    question = services.open_question(session)
    return _public_question(question) if question is not None else None


def _begin_run(session: LiveSession, model_name: str, state: dict[str, Any], request_id: str) -> None:
    if model_name != session.model_name:
        session.model_name = model_name
        session.save(update_fields=["model_name"])
    services.session_state_update(session=session, **state)
    services.run_started(session=session, request_id=request_id, source=state["source"], params=state["params"])


def _reveal(question: Question, answer: str, options: list[str]) -> dict[int, tuple[bool, int]]:
    if options != question.options:
        question.options = options
        question.save(update_fields=["options"])
    return services.question_reveal(question=question, answer=answer)


def _scores(code: str) -> list[dict[str, Any]]:
    session = services.session_by_code(code)
    return services.class_scores(session) if session is not None else []


def _score(code: str, user_id: int) -> int:
    session = services.session_by_code(code)
    return services.scores_by_user(session).get(user_id, 0) if session is not None else 0


def _public_question(question: Question) -> dict[str, Any]:
    """A question as every screen sees it (never the answer before the reveal)."""
    return {"type": "question", "id": question.pk, "kind": question.kind, "prompt": question.prompt,
            "options": question.options, "seq": question.seq, "layer": question.layer, "head": question.head}


def _snapshot(session: LiveSession, user: Any, drives: bool, relay: SessionRelay) -> dict[str, Any]:
    """The first frame: the session, its views, the open question and this user's answer and score."""
    state = session.state
    question = services.open_question(session)
    snapshot: dict[str, Any] = {
        "type": "session", "code": session.code, "title": session.title, "model": session.model_name,
        "role": "console" if drives else "student", "source": state.get("source", ""),
        "params": state.get("params", {}), "views": state.get("views", []), "layer": state.get("layer"),
        "head": state.get("head", "mean"), "request_id": state.get("request_id"),
        "running": bool(state.get("running")), "question": None, "presence": 0,
    }
    if question is not None:
        public = _public_question(question)
        if question.kind == Question.NEXT_TOKEN and not public["options"] and relay.held_seq is not None:
            held = relay.frame(question.request_id, question.seq)
            public["options"] = next_token_options(held) if held is not None else []
        snapshot["question"] = public
        snapshot["my_answer"] = services.my_answer(question, user)
        if drives:
            counts = services.live_counts(question.pk)
            snapshot["counts"] = {"question": question.pk, "counts": counts, "total": sum(counts.values())}
    if drives:
        snapshot["scores"] = services.class_scores(session)
    else:
        snapshot["score"] = services.score_of(session, user)
    return snapshot


async def _record_run(relay: SessionRelay, request_id: str) -> None:
    """Keep the transcript of a run that just ended, once for all web processes (the first to claim it)."""
    claimed = await _redis(playground_redis().set)(f"classroom:saved:{request_id}", "1", nx=True, ex=SAVED_TTL_S)
    if not claimed:
        return
    frames = [orjson.loads(text) for text in relay.frames] if relay.complete else None
    for _ in range(10) if frames is None else ():
        text = await _redis(ended_state)(request_id)
        if text:
            frames = json.loads(text)["frames"]
            break
        await asyncio.sleep(0.1)
    try:
        await _db(services.run_finished)(request_id=request_id, frames=frames or [])
    except Exception:
        log.exception("could not keep the transcript of %s", request_id)
