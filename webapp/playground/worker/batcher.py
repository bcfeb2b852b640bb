"""The compute side of the loop: admit, cancel, step and time out requests; runs in one thread only."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from modelcore.checkpoint import LoadedModel
from modelcore.decoding import BeamsEvent, DecodeError, DecodeParams, DoneEvent, Event, StartEvent, TokenEvent
from modelcore.tokenization import EOS_ID, SourceError
from webapp.playground.attention import View
from webapp.playground.worker import frames
from webapp.playground.worker.frames import AttentionCopy
from webapp.playground.worker.lanes import InFlight, Job, Lane
from webapp.playground.worker.recompute import RecomputeTimes

log = logging.getLogger(__name__)

IDLE_POLL_S = 0.02  # how often cancel/step flags are read while only paced or step-mode requests run
SHARED_LANE_IDLE_S = 300.0  # a shared lane unused this long is dropped, and its KV cache freed


@dataclass(frozen=True)
class Out:
    """One frame for one request's client."""

    reply: str
    request_id: str
    final: bool
    text: str
    relay: str | None = None  # the web process's relay channel (Job.relay)
    kept: bool = True  # part of the request's `state` (an `attention` frame is not: the client asks again)


@dataclass(frozen=True)
class Ended:
    """A request that ended, for the loop to free its slot and record why."""

    user_id: int
    request_id: str
    reason: str
    steps: int
    attention: AttentionCopy | None = None  # kept a while for `view` frames once the request has ended


@dataclass
class Tick:
    """What one turn of the loop produced and what it must watch next."""

    out: list[Out] = field(default_factory=list)
    ended: list[Ended] = field(default_factory=list)
    extended: list[tuple[int, str, float]] = field(default_factory=list)  # (user, request, slot expiry)
    in_flight: list[str] = field(default_factory=list)  # request ids to read cancel flags for
    stepping: list[str] = field(default_factory=list)  # step-mode ids to read step credits for
    wake_in: float | None = None  # seconds until the next turn is needed (None: when a job comes)


Admission = tuple[Job, LoadedModel | Exception]


class Batcher:
    """Every request in flight in this worker process, in lanes: one shared lane per model, private ones."""

    def __init__(self) -> None:
        self.shared: dict[tuple[str, str], Lane] = {}
        self.private: list[Lane] = []
        self.in_flight: dict[str, InFlight] = {}
        self._oversized: list[str] = []  # requests whose frame would not fit a WebSocket message (this turn)
        self.recompute = RecomputeTimes()  # the cache comparison's uncached step times, measured once each

    def tick(
        self, *, jobs: list[Admission], cancels: set[str], credits: dict[str, int], now: float | None = None,
        views: dict[str, View] | None = None,
    ) -> Tick:
        """Admit new jobs, apply cancels, step credits, views and time limits, step every lane that is due."""
        tick = Tick()
        wall = time.time() if now is None else now
        mono = time.monotonic()
        self.recompute.new_turn()
        self._admit_all(jobs, wall, tick)
        self._end_oversized(tick)
        for request_id, view in (views or {}).items():
            if request_id in self.in_flight:
                self._change_view(self.in_flight[request_id], view, tick)
        for request_id in cancels & set(self.in_flight):
            self._stop(request_id, "cancelled", tick)
        for request_id, count in credits.items():
            flight = self.in_flight.get(request_id)
            if flight is not None and count:
                flight.credits += count
                flight.deadline = wall + flight.job.max_seconds
                tick.extended.append((flight.job.user_id, request_id, flight.deadline + 5))
        for request_id in [rid for rid, flight in self.in_flight.items() if wall > flight.deadline]:
            self._stop(request_id, "time_limit", tick)
        for lane in [*self.shared.values(), *self.private]:
            if lane.due(mono):
                self._step(lane, mono, tick)
        self._end_oversized(tick)
        self._drop_empty_lanes(mono)
        self._watch(mono, tick)
        return tick

    def stop_all(self, code: str, message: str) -> Tick:
        """End every request with an error frame (the worker is going away)."""
        tick = Tick()
        for request_id, flight in list(self.in_flight.items()):
            self._error(flight.job, code, message, tick)
            self._forget(request_id, tick, "error", 0)
        self.shared.clear()
        self.private.clear()
        return tick

    # -- joining ----------------------------------------------------------------------------------

    def _admit_all(self, jobs: list[Admission], wall: float, tick: Tick) -> None:
        """Start new requests; those joining one lane are encoded together, in one encoder call."""
        by_lane: dict[int, tuple[Lane, list[_Prepared]]] = {}
        for job, loaded in jobs:
            prepared = self._prepare(job, loaded, tick)
            if prepared is not None:
                lane = self._lane_for(job, prepared.loaded)
                by_lane.setdefault(id(lane), (lane, []))[1].append(prepared)
        for lane, group in by_lane.values():
            starts: list[StartEvent | None]
            try:
                starts = list(lane.decoder.add_many([(p.job.request_id, p.src_ids, p.params) for p in group],
                                                    texts=[p.job.source for p in group]))
            except DecodeError:  # one bad request: start the others one by one and tell that one why
                starts = [self._add_one(lane, p, tick) for p in group]
            for prepared, start in zip(group, starts, strict=True):
                if start is not None:
                    self._started(lane, prepared, start, wall, tick)

    def _prepare(self, job: Job, loaded: LoadedModel | Exception, tick: Tick) -> _Prepared | None:
        """Tokenize and check one job; None (and an error frame) when it cannot start."""
        if isinstance(loaded, Exception):
            self._refuse(job, "model_unavailable", f"the worker could not load {job.model_name}; try again later", tick)
            return None
        try:
            max_len = loaded.config.max_len
            src_ids = loaded.src_tokenizer.source_ids(job.source, max_len)
            params = DecodeParams.from_dict(job.params).capped(len(src_ids), max_len, job.max_tokens)
            return _Prepared(job, loaded, src_ids, params)
        except (SourceError, DecodeError) as error:
            self._refuse(job, _error_code(error), str(error), tick)
        except Exception:  # whatever the job held, its client hears of it and the others go on
            log.exception("could not prepare %s", job.request_id)
            self._refuse(job, "internal", "the worker could not start this request", tick)
        return None

    def _add_one(self, lane: Lane, prepared: _Prepared, tick: Tick) -> StartEvent | None:
        try:
            return lane.decoder.add(prepared.job.request_id, prepared.src_ids, prepared.params, text=prepared.job.source)
        except DecodeError as error:
            self._refuse(prepared.job, _error_code(error), str(error), tick)
            return None

    def _started(self, lane: Lane, prepared: _Prepared, start: StartEvent, wall: float, tick: Tick) -> None:
        job = prepared.job
        flight = InFlight(job=job, lane=lane, deadline=job.submitted_at + job.max_seconds, admitted_at=wall)
        lane.in_flight[job.request_id] = flight
        self.in_flight[job.request_id] = flight
        try:
            if job.compare_cache:
                params = prepared.params
                flight.compare = (prepared.src_ids, params.beam_size if params.strategy == "beam" else 1)
            if prepared.params.capture_attention:
                flight.attention = AttentionCopy(job.view, prepared.loaded)
            self._emit(job, self._start_frame(start, job, prepared.loaded, flight.attention), tick)
        except Exception:
            log.exception("could not start %s", job.request_id)
            self._discard(job.request_id)
            self._refuse(job, "internal", "the worker could not start this request", tick)

    def _refuse(self, job: Job, code: str, message: str, tick: Tick) -> None:
        self._error(job, code, message, tick)
        tick.ended.append(Ended(job.user_id, job.request_id, "error", 0))

    def _lane_for(self, job: Job, loaded: LoadedModel) -> Lane:
        if job.private:
            lane = Lane(loaded, pace_s=0.0 if job.step_mode else job.pace_ms / 1000, step_mode=job.step_mode)
            self.private.append(lane)
            return lane
        key = (str(loaded.path), loaded.checkpoint_hash)
        if key not in self.shared:
            self.shared[key] = Lane(loaded, shared=True)
        return self.shared[key]

    @staticmethod
    def _start_frame(start: StartEvent, job: Job, loaded: LoadedModel, copy: AttentionCopy | None) -> dict:
        options = {"tag": job.tag, "step_mode": job.step_mode, "pace_ms": job.pace_ms}
        return frames.start_frame(start, model_name=job.model_name, loaded=loaded, options=options, copy=copy)

    def _change_view(self, flight: InFlight, view: View, tick: Tick) -> None:
        """Later frames carry this view; the `attention` frame sent now holds every step so far in it."""
        if flight.attention is None:  # the request has no attention: an empty answer, never silence
            frame = {"type": "attention", "request_id": flight.job.request_id, "view": view.to_dict(),
                     "steps": []}
        else:
            frame = flight.attention.change(view, flight.job.request_id)
        self._emit(flight.job, frame, tick, kept=False)

    # -- stepping ----------------------------------------------------------------------------------

    def _step(self, lane: Lane, mono: float, tick: Tick) -> None:
        # Looked up (or measured once) before the step, outside its timing.
        for flight in lane.in_flight.values():
            flight.pending_recompute_ms = (
                None if flight.compare is None
                else self.recompute.step_ms(lane.loaded, *flight.compare, flight.steps_done)
            )
        try:
            events, step_ms, rows, failed = lane.step(mono)
        except Exception:  # the batched step itself failed: its state is unknown, so the lane starts over
            log.exception("decoding step failed on %s; the lane starts over", lane.loaded.path)
            for flight in lane.rebuild():
                self._error(flight.job, "internal", "the decoder failed on this step; try again", tick)
                self._forget(flight.job.request_id, tick, "error", 0)
            return
        for request_id, error in failed.items():  # only these requests end; the others' step went through
            log.error("request %s failed on %s: %r", request_id, lane.loaded.path, error)
            flight = self.in_flight.get(request_id)
            if flight is not None:
                self._error(flight.job, "internal", "the decoder failed on this request; try again", tick)
                self._forget(request_id, tick, "error", 0)
        for event in events:
            flight = self.in_flight.get(_request_id(event))
            if flight is None:
                continue
            self._on_event(flight, event, step_ms, rows, tick)

    def _on_event(self, flight: InFlight, event: Event, step_ms: float, rows: int, tick: Tick) -> None:
        if isinstance(event, TokenEvent | BeamsEvent):
            if flight.first_token_ms is None:
                flight.first_token_ms = round((time.time() - flight.job.submitted_at) * 1000, 3)
            flight.steps_done += 1
            frame = frames.step_frame(event, step_ms=step_ms, batch_rows=rows,
                                      recompute_ms=flight.pending_recompute_ms, copy=flight.attention)
            if isinstance(event, TokenEvent):  # the output so far, joined as the target tokenizer joins it
                tokenizer = flight.lane.loaded.tgt_tokenizer
                if event.id != EOS_ID:
                    flight.tokens.append(tokenizer.id_to_token(event.id))
                frame["text"] = tokenizer.join(flight.tokens)
            self._emit(flight.job, frame, tick)
        elif isinstance(event, DoneEvent):
            self._finish(flight, event, None, tick)

    def _stop(self, request_id: str, reason: str, tick: Tick) -> None:
        flight = self.in_flight[request_id]
        done = flight.lane.decoder.cancel(request_id)
        self._finish(flight, done, reason, tick)

    def _finish(self, flight: InFlight, done: DoneEvent, reason: str | None, tick: Tick) -> None:
        queue_ms = (flight.admitted_at - flight.job.submitted_at) * 1000
        frame = frames.done_frame(done, reason=reason, queue_ms=queue_ms,
                                  first_token_ms=flight.first_token_ms)
        self._emit(flight.job, frame, tick, final=True)
        self._forget(flight.job.request_id, tick, frame["reason"], done.steps)

    def _forget(self, request_id: str, tick: Tick, reason: str, steps: int) -> None:
        flight = self.in_flight.pop(request_id)
        flight.lane.in_flight.pop(request_id, None)
        tick.ended.append(Ended(flight.job.user_id, request_id, reason, steps, flight.attention))

    def _end_oversized(self, tick: Tick) -> None:
        """A request one of whose frames would not fit a WebSocket message was told so (_emit): it stops here."""
        for request_id in self._oversized:
            flight = self.in_flight.get(request_id)
            if flight is not None:
                if request_id in flight.lane.decoder.active:
                    flight.lane.decoder.cancel(request_id)
                self._forget(request_id, tick, "error", 0)
        self._oversized.clear()

    def _discard(self, request_id: str) -> None:
        """Drop a request that failed half-way in, wherever it got to."""
        flight = self.in_flight.pop(request_id, None)
        if flight is not None:
            flight.lane.in_flight.pop(request_id, None)
            if request_id in flight.lane.decoder.active:
                flight.lane.decoder.cancel(request_id)

    def _drop_empty_lanes(self, mono: float) -> None:
        """Private lanes go with their request; a shared one (and its KV cache) after a while unused."""
        self.private = [lane for lane in self.private if lane.in_flight]
        for key, lane in list(self.shared.items()):
            if lane.in_flight:
                lane.idle_since = mono
            elif mono - lane.idle_since > SHARED_LANE_IDLE_S:
                del self.shared[key]

    def _watch(self, mono: float, tick: Tick) -> None:
        tick.in_flight = list(self.in_flight)
        tick.stepping = [rid for rid, flight in self.in_flight.items() if flight.job.step_mode]
        if not self.in_flight:
            tick.wake_in = None
        elif any(lane.in_flight for lane in self.shared.values()):
            tick.wake_in = 0.0
        else:
            waits = [w for lane in self.private if (w := lane.wait_s(mono)) is not None]
            tick.wake_in = min([IDLE_POLL_S, *waits])

    # -- frames ------------------------------------------------------------------------------------

    def _emit(self, job: Job, frame: dict, tick: Tick, *, final: bool = False, kept: bool = True) -> None:
        if job.request_id in self._oversized:  # told already; it leaves at the end of this turn
            return
        text = frames.dumps(frame)
        if frames.too_large(text):  # the socket would drop it without a word: say so, and end the request
            log.error("request %s: a %s frame of %d characters does not fit a WebSocket message",
                      job.request_id, frame.get("type"), len(text))
            message = (f"a {frame.get('type')} frame of this request would exceed the {frames.MAX_FRAME_BYTES:,} bytes "
                       "a message may hold; try a shorter source or fewer beams")
            self._error(job, "frame_too_large", message, tick)
            self._oversized.append(job.request_id)
            return
        tick.out.append(Out(job.reply, job.request_id, final, text, job.relay, kept))

    def _error(self, job: Job, code: str, message: str, tick: Tick) -> None:
        frame = frames.error_frame(code, message, request_id=job.request_id, tag=job.tag)
        tick.out.append(Out(job.reply, job.request_id, True, frames.dumps(frame), job.relay))


@dataclass(frozen=True)
class _Prepared:
    """A job checked and tokenized, ready to join its lane."""

    job: Job
    loaded: LoadedModel
    src_ids: list[int]
    params: DecodeParams


def _request_id(event: Event) -> str:
    return event.request_id  # type: ignore[attr-defined]


def _error_code(error: SourceError | DecodeError) -> str:
    """The protocol's code (docs/protocol.md) for modelcore's reason a request cannot start."""
    return _CODES.get(error.code, "bad_request")


# modelcore's DecodeError / SourceError codes -> the error frame's.
_CODES = {
    "bad_params": "bad_params",
    "empty_source": "empty_source",
    "source_too_long": "source_too_long",
    "unknown_model": "model_unavailable",
}
