"""A live session's run, from the console's Run to its kept transcript: the one owner of it.

- start: the console's `run` becomes a decode job on the interactive queue, the session's state says it runs, and
  its `Transcript` row is made (`run_start`); the console's Step, Cancel and a change of view reach its worker from here.
- follow: each web process with screens on the session follows the run's frames in its SessionRelay (relay.py),
  which this module joins and feeds: the screens' `state` when they join, reconnect or see a gap (`state_send`).
- watch: the event loop's one watch over decodes in flight (webapp/playground/watchdog.py) ends a run no worker
  took (`no_worker`, to the console) or whose worker went silent (`worker_lost`, to every screen).
- repair: a step lost on its way to this process is filled from the worker's whole copy (`run_gap`).
- keep: the transcript is written once for all web processes, whoever gets there first under one claim
  (`classroom:kept:<request id>`): the relay that saw it end (`run_record`), the watch that found it lost
  (`run_lost`), or the session's end (`session_end_keeping_run`). `run_finished` is the one writer of a transcript.

Everything of the playground it needs comes through webapp/playground/stream.py.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import orjson
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.utils import timezone

from webapp.classroom import services
from webapp.classroom.errors import ClassroomError
from webapp.classroom.frames import parse_run
from webapp.classroom.models import LiveSession, SessionState, Transcript
from webapp.classroom.relay import SessionRelay, publish, relay_target, relays
from webapp.ops.redis_client import app_redis
from webapp.playground import stream

log = logging.getLogger(__name__)

KEPT_TTL_S = 3600  # how long the claim on a run's transcript lasts (every process has long followed it by then)
ENDED_BY_SESSION = "session_ended"  # a run's reason: the session ended while it ran (its decode was cancelled)
WORKERS_COPY_WAIT_S = 3.0  # how long the session's end waits for the cancelled run's copy from its worker
UNKEPT_LOOKED_AT = 8  # the latest unkept runs looked for (older ones' worker copies have expired)
STEPS_LOST = ("some of this run's steps were lost on their way to this screen (the message service was away) and "
              "could not be fetched again")


class Follower(Protocol):
    """What the run needs of a socket that follows it."""

    code: str
    user: Any
    user_id: int
    relay: SessionRelay
    closing: bool

    async def send(self, text_data: str) -> None: ...

    async def send_error(self, code: str, message: str) -> None: ...


def _db(fn: Any) -> Any:
    return database_sync_to_async(fn, thread_sensitive=False)


def _redis(fn: Any) -> Any:
    return sync_to_async(fn, thread_sensitive=False)


# -- start -------------------------------------------------------------------------------------------------------


async def run_start(socket: Follower, session: LiveSession, frame: dict[str, Any],
                    before: Callable[[], Awaitable[None]] | None = None) -> None:
    """The console's `run`, checked (ClassroomError for a refused one): `before` is awaited (the caller's own end of
    the old run), a running decode is cancelled, the new one queued and watched; the screens are told its source (what
    their Fork opens)."""
    model_name, request = parse_run(frame, session.model_name, session.run_state.attention_view())
    model = await _db(services.session_model_fields)(user=socket.user, name=model_name)
    if before is not None:
        await before()
    await run_cancel(session, socket.user_id)
    job = stream.new_job(user_id=socket.user_id, reply_channel=f"classroom.{socket.code}", request=request,
                         model=model, relay=relay_target(socket.code))
    changes = {"source": request.source, "params": {**request.params, "step_mode": request.step_mode,
                                                    "pace_ms": request.pace_ms},
               "request_id": job["request_id"], "running": True, "tokens": [], "driver": socket.user_id}
    await _db(_run_begin)(session, model_name, changes, job["request_id"])
    refusal = await stream.job_send(job)
    if refusal is not None:
        await _db(services.session_state_update)(session=session, running=False)
        raise ClassroomError(refusal.code, refusal.message)
    watch_queued(socket, job["request_id"])
    await publish(socket.code, {"type": "run", "model": model_name, "source": request.source,
                                "params": {"strategy": request.params.get("strategy", "greedy")}})


def _run_begin(session: LiveSession, model_name: str, changes: dict[str, Any], request_id: str) -> None:
    """In a thread: the session's state takes these changes (the run is on), and its transcript is opened (a run left
    unkept before it, kept now from its worker's copy when there is one)."""
    runs_keep_unkept(session)
    if model_name != session.model_name:
        session.model_name = model_name
        session.save(update_fields=["model_name"])
    services.session_state_update(session=session, **changes)
    transcript_open(session=session, request_id=request_id, source=changes["source"], params=changes["params"])


def transcript_open(*, session: LiveSession, request_id: str, source: str, params: dict[str, Any]) -> Transcript:
    """The run's transcript, made (with no frames yet) as it is queued; run_finished writes it once the run ends."""
    return Transcript.objects.create(session=session, request_id=request_id, source=source, params=params)


async def run_cancel(session: LiveSession, user_id: int) -> None:
    """Stop the session's running decode, if any (its worker ends it with `done`, reason cancelled)."""
    state = session.run_state
    if state.running_request:
        await _redis(stream.decode_cancel)(user_id=state.driver or user_id, request_ids=[state.running_request])


async def run_step(session: LiveSession, relay: SessionRelay) -> None:
    """One more token of the session's step-by-step decode."""
    state = session.run_state
    if not state.stepping or (relay.ended and relay.request_id == state.request_id):
        raise ClassroomError("not_stepping", "no step-by-step decode is running: press Step to start one")
    await _redis(stream.decode_step)(request_ids=[state.request_id])


async def run_view(state: SessionState) -> dict[str, Any] | None:
    """The session's run seen in its new attention view: a running one's worker sends every step so far in it (and
    the later steps in it too); an ended one's `attention` frame is read from its worker's copy and returned."""
    request_id = state.request_id
    if not request_id:
        return None
    view = stream.parse_view_fields(state.attention_view())
    if state.running:
        await _redis(stream.attention_view)(request_id, view)
        return None
    text = await _redis(stream.ended_attention)(request_id, view)
    return orjson.loads(text) if text is not None else None


# -- follow ------------------------------------------------------------------------------------------------------


async def relay_join(socket: Follower, session: LiveSession,
                     question: Callable[[], Awaitable[dict[str, Any] | None]]) -> SessionRelay:
    """This process's relay of the session, with the socket among its screens; `question` reads the open question
    (for the relay's held step) when the socket is the process's first screen of the session."""
    return await relays().join(socket, socket.code, request_id=session.run_state.request_id, question=question,
                               on_final=run_record, on_run=watch_run, on_gap=run_gap)


async def relay_leave(socket: Follower) -> None:
    await relays().leave(socket, socket.code)


async def state_send(socket: Follower, session: LiveSession) -> None:
    """The current run's `state` to this socket: the relay's copy when whole, else the worker's (the socket waits
    for it), else the kept transcript of an ended run."""
    state = session.run_state
    request_id = state.request_id
    if not request_id:
        return
    relay = socket.relay
    if state.running:
        watch_run(relay, request_id)
    else:
        await ended_load(relay, state)
    if relay.request_id == request_id and relay.complete:
        await socket.send(text_data=relay.state_text())
        return
    if relay.request_id == request_id and relay.ended:  # ended here before this copy was whole: the worker's copy
        relay.waiting.append(socket)
        await run_gap(relay, request_id, True)
        return
    if state.running:
        relay.waiting.append(socket)
        await _redis(stream.request_resync)(request_id)
        return
    await socket.send(text_data=await ended_state_text(request_id))


async def ended_load(relay: SessionRelay, state: SessionState) -> None:
    """A run that ended before this process followed it: its kept transcript goes to the relay, which holds back
    an open question's step from it (and finds the model's top-k there for the question's options)."""
    request_id = state.request_id
    if request_id and not state.running and relay.request_id == request_id and not relay.complete:
        frames = orjson.loads(await ended_state_text(request_id))["frames"]
        if frames:
            relay.load_ended(request_id, frames)


_ended_states: OrderedDict[str, str] = OrderedDict()  # request id -> its `state` frame, for the last few ended runs
ENDED_STATES_KEPT = 4


async def ended_state_text(request_id: str) -> str:
    """The `state` frame of a run that ended, as text: its kept transcript (read once per process, as it changes no
    more), else the worker's copy in Redis, else no frames. A class resyncing reads it from memory, not the whole
    transcript from the database each time."""
    text = _ended_states.get(request_id)
    if text is not None:
        _ended_states.move_to_end(request_id)
        return text
    frames = await _db(transcript_frames)(request_id)
    if frames is None:
        kept = await _redis(stream.ended_state)(request_id)
        return stream.state_text(request_id, _texts(orjson.loads(kept)["frames"] if kept else []))
    text = stream.state_text(request_id, _texts(frames))
    _ended_states[request_id] = text
    while len(_ended_states) > ENDED_STATES_KEPT:
        _ended_states.popitem(last=False)
    return text


def _texts(frames: list[dict[str, Any]]) -> list[str]:
    return [orjson.dumps(frame).decode() for frame in frames]


def transcript_frames(request_id: str) -> list[dict[str, Any]] | None:
    """The frames of a run's kept transcript (None: not kept)."""
    transcript = Transcript.objects.filter(request_id=request_id).first()
    return transcript.frames if transcript is not None and transcript.ended_at is not None else None


# -- watch -------------------------------------------------------------------------------------------------------


def watch_queued(socket: Follower, request_id: str) -> None:
    """The console's run, from its queueing: no frame within PLAYGROUND_QUEUE_WAIT_S, or no interactive worker alive
    any more, and no worker took it (`no_worker`, to the console unless its socket is closing); once its frames
    come, watch_run goes on watching it in every web process that follows it."""
    relay = socket.relay
    followed = [False]  # its frames have reached this relay

    def heard() -> float | None:
        if relay.request_id != request_id:
            return None
        followed[0] = True
        return relay.heard

    async def lost(code: str) -> None:
        if code == stream.NO_WORKER and not socket.closing and await run_lost(relay, request_id,
                                                                              stream.lost_frame(request_id, code)):
            await socket.send_error("no_worker", "no decoding worker took this run in time; try again in a minute")
        elif code == stream.WORKER_LOST:
            await _worker_lost(relay, request_id)

    stream.watchdog().watch((id(relay), request_id), stream.Watched(
        request_id=request_id, heard=heard, lost=lost, over=lambda: followed[0] and (relay.request_id != request_id or relay.ended)))


def watch_run(relay: SessionRelay, request_id: str) -> None:
    """Watch this run for this process's screens (once per relay), whether or not a console here watches it: when no
    worker speaks for it (a frame, a beat) for PLAYGROUND_WORKER_LOST_S, its worker died."""
    key = (id(relay), request_id)
    watchdog = stream.watchdog()
    if watchdog.watching(key):
        return
    since = time.monotonic()

    async def lost(code: str) -> None:
        await _worker_lost(relay, request_id)

    async def away(cut_off: bool) -> None:
        await (_cut_off if cut_off else _reconnected)(relay, request_id)

    watchdog.watch(key, stream.Watched(
        request_id=request_id, heard=lambda: max(since, relay.heard), lost=lost, away=away,
        over=lambda: relay.request_id != request_id or relay.ended or not relay.sockets))


async def _cut_off(relay: SessionRelay, request_id: str) -> None:
    """This process cannot reach Redis while the run it follows is silent: its screens are told they are behind (the
    run may go on, or end, without this process hearing it), in words; nothing is called lost meanwhile."""
    if relay.request_id != request_id:
        return
    await relay.to_all(orjson.dumps(stream.catching_up_frame(request_id)).decode())


async def _reconnected(relay: SessionRelay, request_id: str) -> None:
    """Redis answers this process again after a cut: every screen waits for the run's whole copy from its source
    (the worker's answer to a resync while it runs; the copy it kept, or the error that ended it, once it ended: the
    watch decides), as the steps published meanwhile never reached this process."""
    if relay.request_id != request_id or relay.ended:
        return
    relay.complete = False  # this copy may have a hole: no screen is served it
    relay.waiting = list(dict.fromkeys([*relay.waiting, *relay.sockets]))
    kept = await _redis(stream.ended_state)(request_id)
    if kept is None:  # still running (or lost: the watch says so next)
        await _redis(stream.request_resync)(request_id)
        return
    relay.ended = True  # it ended during the cut: its worker's copy is the whole run
    await relay.state_arrived(request_id, {"frames": orjson.loads(kept)["frames"]})
    await run_record(relay, request_id, workers_copy_first=True)


async def _worker_lost(relay: SessionRelay, request_id: str) -> None:
    """End the run with `worker_lost` for every screen (once, whichever process sees it first), and answer the
    sockets waiting for its state with what is known; the session then says it is not running. A run whose worker
    ended it though this process did not hear the end is kept from the worker's copy instead, never called lost."""
    if relay.request_id != request_id:
        return
    if await run_ended_by_its_worker(relay, request_id):
        waiting, relay.waiting = relay.waiting, []
        await send_ended_state(list(dict.fromkeys([*waiting, *([] if relay.ended else relay.sockets)])), request_id)
        return
    error = stream.lost_frame(request_id, stream.WORKER_LOST)
    if await run_lost(relay, request_id, error):
        await publish(relay.code, error)
    waiting, relay.waiting = relay.waiting, []
    await send_ended_state(waiting, request_id)


async def send_ended_state(sockets: list[Any], request_id: str) -> None:
    """The ended run's state to these sockets (a socket closing meanwhile is skipped)."""
    if not sockets:
        return
    text = await ended_state_text(request_id)
    for socket in sockets:
        try:
            await socket.send(text_data=text)
        except Exception:  # a socket closing meanwhile: the others still get it
            log.debug("state to a closing socket dropped", exc_info=True)


# -- repair ------------------------------------------------------------------------------------------------------


async def _workers_copy(request_id: str) -> list[dict[str, Any]] | None:
    """The frames the worker kept when this run ended (it writes them as it sends `done`: a moment may pass)."""
    for _ in range(10):
        text = await _redis(stream.ended_state)(request_id)
        if text:
            return orjson.loads(text)["frames"]
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
        await _redis(stream.request_resync)(request_id)
        return
    frames = await _workers_copy(request_id)
    await relay.state_arrived(request_id, {"frames": frames if frames is not None else _with_hole_named(relay, request_id)})


# -- keep --------------------------------------------------------------------------------------------------------


def _claim(request_id: str) -> bool:
    """In a thread: the right to keep this run's transcript, once for all web processes and paths."""
    return bool(app_redis().set(f"classroom:kept:{request_id}", "1", nx=True, ex=KEPT_TTL_S))


async def run_record(relay: SessionRelay, request_id: str, *, workers_copy_first: bool = False) -> None:
    """Keep the transcript of a run that just ended, once for all web processes (the first to claim it): this
    process's copy when whole (unless `workers_copy_first`), else the worker's; a hole neither fills is kept with an
    error frame naming it."""
    if not await _redis(_claim)(request_id):
        return
    mine = relay.complete and not workers_copy_first
    frames = [orjson.loads(text) for text in relay.frames] if mine else await _workers_copy(request_id)
    if frames is None:
        frames = _with_hole_named(relay, request_id) if relay.request_id == request_id and relay.frames else []
    try:
        await _db(run_finished)(request_id=request_id, frames=frames)
    except Exception:
        log.exception("could not keep the transcript of %s", request_id)


def _lost(request_id: str, frames: list[dict[str, Any]], error: dict[str, Any]) -> bool:
    """In a thread: end the lost run once for all web processes (the session idle, its transcript kept with the error
    as its last frame); False when it ended, a newer run replaced it, or another process or path kept it."""
    transcript = Transcript.objects.filter(request_id=request_id).select_related("session").first()
    session = transcript.session if transcript is not None else None
    state = session.run_state if session is not None else None
    if state is None or state.running_request != request_id or not _claim(request_id):
        return False
    # A worker that comes back finds the cancel flag and drops it; the driver's slot is freed.
    stream.decode_cancel(user_id=state.driver or session.instructor_id, request_ids=[request_id])
    run_finished(request_id=request_id, frames=[*frames, error])  # marks the session not running
    _ended_states.pop(request_id, None)
    return True


async def run_ended_by_its_worker(relay: SessionRelay, request_id: str) -> bool:
    """Whether the run's worker ended it (it keeps its copy as it sends `done`), though this process did not see the
    end: its relay began following after the `done`, or the process was too busy to read it in time. The run is then
    kept from the worker's copy (once for all processes), never called lost."""
    if not await _redis(stream.ended_state)(request_id):
        return False
    await run_record(relay, request_id, workers_copy_first=True)
    return True


async def run_lost(relay: SessionRelay, request_id: str, error: dict[str, Any]) -> bool:
    """End a run no worker answers for (`no_worker`, `worker_lost`) with the frames that reached this process:
    a reconnecting screen then gets them and the error as the run's `state`, and the session says it is not running."""
    frames = [orjson.loads(text) for text in relay.frames] if relay.request_id == request_id else []
    return await _db(_lost)(request_id, frames, error)


def run_finished(*, request_id: str, frames: list[dict[str, Any]], reason: str | None = None) -> None:
    """The one writer of a run's transcript: its frames (what the history page replays), its text and why it stopped
    (`reason`: say why instead of the last frame); the session's state says it is not running."""
    transcript = Transcript.objects.filter(request_id=request_id).select_related("session").first()
    if transcript is None:
        return
    final = frames[-1] if frames else {}
    if reason is None and final.get("reason") == "cancelled" and not transcript.session.live:
        reason = ENDED_BY_SESSION  # cancelled by the session's end, not by the Cancel button
    transcript.frames = frames
    transcript.text = str(final.get("text", ""))[:10_000]
    transcript.reason = str(reason or final.get("reason") or final.get("code") or "")[:32]
    transcript.ended_at = timezone.now()
    transcript.save(update_fields=["frames", "text", "reason", "ended_at"])
    tokens = [f.get("token") for f in frames if f.get("type") == "token"]
    session = transcript.session
    if session.run_state.request_id == request_id:
        services.session_state_update(session=session, tokens=tokens, running=False)


def run_keep_workers_copy(request_id: str, *, wait_s: float = 0.0) -> bool:
    """In a thread: keep a run nobody kept from the frames its worker kept when it ended (for a few minutes), waiting
    up to wait_s for them; False when there is no such copy (yet) or another path kept it."""
    deadline = time.monotonic() + wait_s
    while True:
        text = stream.ended_state(request_id)
        if text is not None:
            break
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    if not Transcript.objects.filter(request_id=request_id, ended_at__isnull=True).exists() or not _claim(request_id):
        return False
    run_finished(request_id=request_id, frames=orjson.loads(text).get("frames", []))
    return True


def runs_keep_unkept(session: LiveSession) -> None:
    """In a thread: keep the session's runs that ended while no screen followed them, from their workers' copies
    while those last (the console's next run and the session's end do it; the history page only reads them)."""
    current = session.run_state.running_request if session.live else None
    unkept = session.transcripts.filter(ended_at__isnull=True).exclude(request_id=current or "").order_by("-pk")
    for request_id in unkept.values_list("request_id", flat=True)[:UNKEPT_LOOKED_AT]:
        run_keep_workers_copy(request_id)


def session_end_keeping_run(*, session: LiveSession, reason: str = LiveSession.ENDED_BY_INSTRUCTOR) -> LiveSession:
    """In a thread: end a session; a decode still running (a step-by-step one waits for its next Step) is cancelled
    and kept from its worker's copy (up to WORKERS_COPY_WAIT_S for it), as every screen's socket closes with the end
    and none is left to keep it; it reads as stopped by the end of the session."""
    state = session.run_state
    request_id = state.running_request
    services.session_end(session=session, reason=reason)  # first: whoever keeps the cancelled run sees it ended
    if request_id:
        stream.decode_cancel(user_id=state.driver or session.instructor_id, request_ids=[request_id])
        run_keep_workers_copy(request_id, wait_s=WORKERS_COPY_WAIT_S)
    runs_keep_unkept(session)
    return session


def workers_copies(request_ids: list[str]) -> dict[str, dict[str, Any]]:
    """In a thread, reading only: the copies the workers kept of these runs (for the history page's unkept runs)."""
    copies = {}
    for request_id in request_ids:
        text = stream.ended_state(request_id)
        if text is not None:
            copies[request_id] = orjson.loads(text)
    return copies

