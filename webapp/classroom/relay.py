"""A session's frames for every socket of one web process: one channel-layer message per step per process.

The session's decode is an ordinary playground job whose `relay` is the session's group
(`relay_target`): the worker publishes each step once on it, every web process with
a participant of the session receives it once (its SessionRelay subscribes one channel to the
group), and the relay hands the frame text to each of its sockets as it came, without a
message or a dispatch per student. Classroom events (questions, answers, reveal, presence,
views) travel the same group, so they keep their order with the frames.

The relay also keeps the current request's frames, so a socket that joins or reconnects gets
the state at once; a relay that starts mid-decode asks the worker for a `state` frame first
(the playground's resync). A step that a question is about is held back until the reveal.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import orjson
from channels.layers import get_channel_layer

from webapp.classroom.reveal import next_token_options
from webapp.playground.stream import group_target, state_text
from webapp.realtime.loops import per_loop

STEP_TYPES = ("token", "beams")  # the frames that carry a step's seq
log = logging.getLogger(__name__)

EVENT = "classroom.event"


def session_group(code: str) -> str:
    return f"classroom.{code}"


def relay_target(code: str) -> str:
    """What a session's decode job names as its relay: the session's group. The worker's `group_send` is one
    publish on the pub/sub layer, and every web process subscribed to the group gets it once."""
    return group_target(session_group(code))


def event_message(frame: dict[str, Any], *, to: str = "all", **extra: Any) -> dict[str, Any]:
    """A classroom event for every relay of the session: `to` is all, console or students."""
    return {"type": EVENT, "frame": frame, "to": to, **extra}


async def publish(code: str, frame: dict[str, Any], **extra: Any) -> None:
    """A classroom event for every screen of the session, on every web process (each relay hands it to its screens,
    as each socket shows it: actions.event_frame)."""
    await get_channel_layer().group_send(session_group(code), event_message(frame, **extra))


class Seat(Protocol):
    """What the relay needs of a socket."""

    drives: bool
    user_id: int

    async def send(self, text_data: str) -> None: ...

    async def classroom_event(self, message: dict[str, Any]) -> None: ...


class SessionRelay:
    def __init__(self, code: str, on_final: Any, on_run: Any = None, on_gap: Any = None) -> None:
        self.code = code
        self.sockets: dict[Any, None] = {}  # in the order they joined
        self.channel: str | None = None
        self.task: asyncio.Task[None] | None = None
        self.request_id: str | None = None
        self.frames: list[str] = []  # the current request's frame texts, in the worker's order
        self.seqs: list[int | None] = []  # beside each frame, its step's seq (None: not a step), parsed once
        self.steps_seen = 0  # how many of those are steps (token or beams): each frame checks it for a lost step
        self.start_parsed: dict[str, Any] | None = None  # the current request's `start` frame, parsed once
        self.complete = False  # frames hold everything from `start` on
        self.ended = False
        self.held_seq: int | None = None  # a question's step, kept from the students until the reveal
        self.question: dict[str, Any] | None = None  # the open question that holds it
        self.held_from: int | None = None  # index in frames of the held step: it and every frame after wait
        self.waiting: list[Any] = []  # sockets that asked for the state before this relay had it
        self.heard = time.monotonic()  # the current request's last frame or worker beat here
        self._on_final = on_final
        self._on_run = on_run  # called (relay, request_id) when a run's first frame arrives here
        self._on_gap = on_gap  # awaited (relay, request_id, ended) when a step is seen to have been lost on its way

    async def start(self, *, request_id: str | None, question: dict[str, Any] | None) -> None:
        layer = get_channel_layer()
        self.channel = await layer.new_channel(prefix="classroom.relay.")
        await layer.group_add(session_group(self.code), self.channel)
        self.request_id, self.question = request_id, question
        self.held_seq = question.get("seq") if question is not None and question.get("kind") != "choice" else None
        self.task = asyncio.create_task(self._pump(layer, self.channel))

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
        layer = get_channel_layer()
        if self.channel is not None:
            try:
                await layer.group_discard(session_group(self.code), self.channel)
            except Exception:  # Redis away: the subscription went with it
                log.warning("classroom relay could not leave its group", exc_info=True)

    # -- what sockets read ------------------------------------------------------------------------

    def shown_frames(self) -> list[str]:
        """The frames a student may see now (the held step, and any after it, left out)."""
        return list(self.frames if self.held_from is None else self.frames[:self.held_from])

    def state_text(self) -> str:
        return state_text(self.request_id or "", self.shown_frames())

    def frame(self, request_id: str, seq: int) -> dict[str, Any] | None:
        """The step frame of this seq of the current request, if it arrived here."""
        if request_id != self.request_id:
            return None
        for text, step in zip(self.frames, self.seqs, strict=True):
            if step == seq:
                return orjson.loads(text)
        return None

    def start_frame(self) -> dict[str, Any] | None:
        return self.start_parsed

    def _keep(self, frames: list[dict[str, Any]], texts: list[str]) -> None:
        """Record frames (parsed, and their texts) as the current request's, after those kept."""
        if not self.frames and frames and frames[0].get("type") == "start":
            self.start_parsed = frames[0]
        self.frames.extend(texts)
        seqs = [f.get("seq") if f.get("type") in STEP_TYPES else None for f in frames]
        self.seqs.extend(seqs)
        self.steps_seen += sum(seq is not None for seq in seqs)

    # -- the pump ---------------------------------------------------------------------------------

    async def _pump(self, layer: Any, channel: str) -> None:
        while True:
            try:
                message = await layer.receive(channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("classroom relay could not read its channel")
                await asyncio.sleep(0.1)
                continue
            try:
                if message.get("type") == EVENT:
                    await self._event(message)
                else:
                    if self.request_id in message.get("alive", ()):  # the worker holds it between steps
                        self.heard = time.monotonic()
                    for _reply, request_id, final, text in message.get("frames", ()):
                        await self._frame(request_id, final, text)
            except Exception:  # one bad message must not stop the session for everyone here
                log.exception("classroom relay could not deliver a message")
            await asyncio.sleep(0)

    async def _frame(self, request_id: str, final: bool, text: str) -> None:
        frame = orjson.loads(text)  # once per frame and web process, whatever the serializer's spacing
        if frame.get("type") == "state":  # the worker's resync answer
            await self.state_arrived(request_id, frame)
            return
        self.heard = time.monotonic()
        if request_id != self.request_id:  # a new run: its `start` begins the record
            self.request_id, self.ended = request_id, False
            self._forget()
            self.held_seq = self.held_from = None
            self.complete = frame.get("type") == "start"
            if self._on_run is not None:
                self._on_run(self, request_id)
        lost = self.complete and self._lost_before(frame)
        if lost:  # this copy has a hole: new screens wait for the worker's whole copy instead of getting it
            self.complete = False
        self._keep([frame], [text])
        # The held step, or a later one when the held step itself was lost on its way: a student must not read
        # past the question before the reveal, hole or not (the worker's whole copy then puts the held step back).
        if self.held_from is None and self._carries_hold(frame):
            self.held_from = len(self.frames) - 1
        if self.held_from is None:
            await self.to_all(text)
        elif self.held_from == len(self.frames) - 1:
            await self._offer_options()
        if final:
            self.ended = True
        # A hole seen here, or a run that ended before this relay held all of it (it began following mid-run and the
        # worker's answer to its resync never came: the resync reached the worker after the last step): its screens
        # waiting for the state get the worker's whole copy instead of waiting for ever.
        gap = (lost or (final and not self.complete)) and self._on_gap is not None
        if gap or final:  # kept through the relay's stop: the last screen leaving must not cancel the transcript
            await _unstoppable(self._settle(request_id, final, gap))

    async def _settle(self, request_id: str, final: bool, gap: bool) -> None:
        if gap:
            await self._on_gap(self, request_id, final)
        if final:
            await self._on_final(self, request_id)

    def _at_or_past_hold(self, seq: int | None) -> bool:
        return seq is not None and self.held_seq is not None and seq >= self.held_seq

    def _carries_hold(self, frame: dict[str, Any]) -> bool:
        """Whether a frame tells something of the held step or later, whatever kind it is: the step itself or a later
        one, an `attention` frame whose steps reach it (a view changed while the held step's own frame was lost on its
        way here), or the run's `done` (its text holds every token)."""
        if self.held_seq is None:
            return False
        kind = frame.get("type")
        if kind in STEP_TYPES:
            return self._at_or_past_hold(frame.get("seq"))
        if kind == "attention":
            return len(frame.get("steps") or ()) > self.held_seq
        return kind == "done"

    async def _offer_options(self) -> None:
        """A next-token question's options, once its held step is here: students pick among the model's top-k at
        that step, shown without probabilities (a later step, kept because the held one was lost, offers none)."""
        if self.question is None or self.question.get("kind") != "next_token" or self.question.get("options"):
            return
        if self.held_from is None or self.seqs[self.held_from] != self.held_seq:
            return
        options = next_token_options(orjson.loads(self.frames[self.held_from]))
        self.question["options"] = options
        await self.to_all(orjson.dumps({"type": "options", "question": self.question["id"], "options": options}).decode())

    def _lost_before(self, frame: dict[str, Any]) -> bool:
        """Whether this frame shows that a step of the run never arrived here (a Redis outage, a web process's
        channel layer reconnecting): a step's seq beyond the steps seen, or `done` counting more steps."""
        if frame.get("type") in STEP_TYPES:
            return frame.get("seq") != self.steps_seen
        if frame.get("type") == "done":
            return isinstance(frame.get("steps"), int) and frame["steps"] > self.steps_seen
        return False

    def _forget(self) -> None:
        self.frames, self.seqs, self.start_parsed, self.steps_seen = [], [], None, 0

    def _replace(self, frames: list[dict[str, Any]]) -> None:
        """Hold these frames as the whole of the current request (from its `start`), the held step found in them."""
        self._forget()
        self._keep(frames, [orjson.dumps(frame).decode() for frame in frames])
        self.complete = True
        self.held_from = next((i for i, frame in enumerate(frames) if self._carries_hold(frame)), None)

    def load_ended(self, request_id: str, frames: list[dict[str, Any]]) -> None:
        """An ended run's kept transcript, for a relay that started after it ended: its screens then get the state
        with the held step left out, and the reveal finds that step here, as on a relay that saw the run."""
        if request_id != self.request_id or self.complete:
            return
        self._replace(frames)
        self.ended = True

    async def state_arrived(self, request_id: str, state: dict[str, Any]) -> None:
        """The worker's whole copy of the current run (its resync answer, or the copy it kept at the end)."""
        if request_id != self.request_id:
            return
        if not self.complete or len(state["frames"]) >= len(self.frames):
            self._replace(state["frames"])
            await self._offer_options()  # the held step may have come only with this copy
        waiting, self.waiting = self.waiting, []
        if waiting:
            shown = self.state_text()
            for socket in waiting:
                await _safe_send(socket, shown)

    async def _event(self, message: dict[str, Any]) -> None:
        frame = message["frame"]
        kind = frame.get("type")
        if kind == "attention" and frame.get("request_id") == self.request_id:
            self._keep([frame], [orjson.dumps(frame).decode()])  # an ended run's other view: late joiners get it too
            if self.held_from is not None or self._carries_hold(frame):  # it shows the held step: out until the reveal
                if self.held_from is None:
                    self.held_from = len(self.frames) - 1
                return
        release: list[str] = []
        if kind == "question":
            self.held_seq, self.question = message.get("hold"), dict(frame)
        elif kind in ("reveal", "question_closed"):
            if self.held_from is not None:
                release = self.frames[self.held_from:]
            self.held_seq = self.held_from = self.question = None
        for text in release:  # the held step reaches every screen just before the reveal
            await self.to_all(text)
        for socket in list(self.sockets):
            try:
                await socket.classroom_event(message)
            except Exception:
                log.exception("classroom event could not reach a socket")

    async def to_all(self, text: str) -> None:
        """This text to every screen of the relay (a socket closing meanwhile is skipped)."""
        for socket in list(self.sockets):
            await _safe_send(socket, text)


_settling: set[asyncio.Task[None]] = set()  # repairs and transcripts under way, held until they end


async def _unstoppable(work: Any) -> None:
    """Await `work` in a task of its own that a cancelled pump (the relay stopping as its last socket leaves, right
    after a run's `done` reached it) does not cancel: the run's transcript is still kept and its hole still repaired."""
    task = asyncio.ensure_future(work)
    _settling.add(task)
    task.add_done_callback(_settling.discard)
    await asyncio.shield(task)


async def _safe_send(socket: Any, text: str) -> None:
    try:
        await socket.send(text_data=text)
    except Exception:  # a socket closing as the frame went: the others still get it
        log.debug("classroom frame to a closing socket dropped", exc_info=True)


class Relays:
    """One per event loop: a SessionRelay per session that has sockets here."""

    def __init__(self) -> None:
        self.by_code: dict[str, SessionRelay] = {}
        self.lock = asyncio.Lock()

    async def join(self, socket: Any, code: str, *, request_id: str | None,
                   question: Callable[[], Awaitable[dict[str, Any] | None]],
                   on_final: Any, on_run: Any = None, on_gap: Any = None) -> SessionRelay:
        """The session's relay in this process, started (with the open `question()`) by its first screen."""
        async with self.lock:
            relay = self.by_code.get(code)
            if relay is None:
                relay = SessionRelay(code, on_final, on_run, on_gap)
                await relay.start(request_id=request_id, question=await question())
                self.by_code[code] = relay
            relay.sockets[socket] = None
            return relay

    async def leave(self, socket: Any, code: str) -> None:
        async with self.lock:
            relay = self.by_code.get(code)
            if relay is None:
                return
            relay.sockets.pop(socket, None)
            if socket in relay.waiting:
                relay.waiting.remove(socket)
            if not relay.sockets:
                del self.by_code[code]
                await relay.stop()


relays = per_loop(Relays)
