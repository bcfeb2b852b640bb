"""`/ws/classroom/<code>/`: the instructor drives the session, every participant's screen follows.

The socket's edge: it opens and closes, parses each frame and hands it to its one call in actions.py, and sends what
comes back (a refusal, a ClassroomError, as an `error` frame). Console frames (run, step, cancel, views, question,
reveal, close_question, end, lesson, demo, exercise, experiment, plan, seeds) go to their handler in `actions.CONSOLE`
only after one check, here, that the user drives the session now; a console action that carries a `ref` is answered
`taken` with it once done, or its error names it. Participants answer, add seeds and resync. Decode frames and classroom events reach every socket through the
process's SessionRelay (webapp/classroom/relay.py), which calls `send` and `classroom_event`.
"""
from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from webapp.classroom import actions, session_run
from webapp.classroom.errors import ClassroomError
from webapp.classroom.steps.screens import scope_language
from webapp.realtime.sockets import JsonSocket

log = logging.getLogger(__name__)

CLOSE_CODES = {"too_many": 4429}  # a refused open closes with this, else 4404 (no such live session)


class ClassroomSocket(JsonSocket):
    frame_types = (*actions.CONSOLE_ACTIONS, "answer", "add_seed", "resync")
    closing = False  # JsonSocket sets it when the socket closes

    async def on_connect(self) -> None:
        self.code = self.scope["url_route"]["kwargs"]["code"]
        self.user = self.scope["user"]
        self.user_id = self.user.pk
        self.language = scope_language(self.scope)  # what lesson steps' frames carry is rendered in it
        try:
            session, self.drives, self.seated = await actions.session_open(self, self.scope, self.handshake_roles)
        except ClassroomError as refusal:
            await self.send_error(refusal.code, refusal.message)
            await self.close(code=CLOSE_CODES.get(refusal.code, 4404))
            return
        self.session_id = session.pk
        self._before_snapshot: list[str] | None = []  # what the relay hands this socket before its `session` frame
        self.relay = await actions.relay_join(self, session)
        await session_run.ended_load(self.relay, session.run_state)
        self.present = True
        await actions.presence(self, +1)
        snapshot = await actions.snapshot(self, session)
        held, self._before_snapshot = self._before_snapshot, None
        await self.send_json(snapshot)  # the `session` frame first (docs/classroom-socket.md), then what came meanwhile
        for text in held:
            await self.send(text_data=text)
        await session_run.state_send(self, session)

    async def send(self, text_data: str | None = None, bytes_data: bytes | None = None, close: bool = False) -> None:
        held = getattr(self, "_before_snapshot", None)
        if held is not None and text_data is not None and not close:
            held.append(text_data)  # an event of the session (presence, a question) before this socket's snapshot
            return
        await super().send(text_data=text_data, bytes_data=bytes_data, close=close)

    async def disconnect(self, code: int) -> None:
        if getattr(self, "relay", None) is not None:
            await session_run.relay_leave(self)
        if getattr(self, "present", False):
            self.present = False
            try:
                await actions.presence(self, -1)
            except Exception:  # Redis away: the count corrects itself when the socket comes back
                log.warning("could not record a participant leaving", exc_info=True)

    async def _refusing(self, action: Callable[[], Awaitable[None]]) -> None:
        """Run an action; its refusal goes to this socket as an `error` frame."""
        try:
            await action()
        except ClassroomError as refusal:
            await self.send_error(refusal.code, refusal.message)

    async def on_frame(self, kind: str, frame: dict[str, Any]) -> None:
        """A console action goes to its `actions.console_<type>` with the session, once this user may drive it now
        (rights are read afresh at every action); the rest (answer, resync) to their `on_<type>`."""
        if kind not in actions.CONSOLE_ACTIONS:
            await super().on_frame(kind, frame)
            return
        ref = frame.pop("ref", None)  # the console's number for this action: `taken`, or the error, names it
        if ref is not None and (isinstance(ref, bool) or not isinstance(ref, int) or not 0 <= ref < 2**31):
            await self.send_error("bad_params", "ref must be a whole number")
            return
        named = {} if ref is None else {"ref": ref}
        try:
            session = await actions.session_driven(self)
            await actions.CONSOLE[kind](self, session, frame)
        except ClassroomError as refusal:
            await self.send_error(refusal.code, refusal.message, **named)
            return
        if ref is not None:
            await self.send_json({"type": "taken", "ref": ref, "action": kind})

    async def on_answer(self, frame: dict[str, Any]) -> None:
        async def answer() -> None:
            await self.send_json(await actions.answer(self, frame))

        await self._refusing(answer)

    async def on_add_seed(self, frame: dict[str, Any]) -> None:
        async def add() -> None:
            await self.send_json(await actions.add_seed(self, frame))

        await self._refusing(add)

    async def on_resync(self, frame: dict[str, Any]) -> None:
        # a full state frame at most once an interval (JsonSocket)
        await self.paced_resync(lambda: self._refusing(lambda: actions.resync(self)))

    async def classroom_event(self, message: dict[str, Any]) -> None:
        """A classroom event from the relay, as this socket shows it; `ended` closes the socket."""
        frame = await actions.event_frame(self, message)
        if frame is None:
            return
        await self.send(text_data=orjson.dumps(frame).decode())
        if frame.get("type") == "ended":
            await self.close(code=4404)
