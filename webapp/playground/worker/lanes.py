"""Requests in flight and the lanes that step them.

A lane is one modelcore BatchDecoder. Full-speed requests on the same model share one lane,
so they advance together, one batched step for all (continuous batching). A paced or
step-mode request has a lane of its own: the engine steps every request of a batch at once,
so a request that must wait between tokens cannot sit in a batch that must not.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from modelcore.checkpoint import LoadedModel
from modelcore.decoding import BatchDecoder, Event, open_decoder
from modelcore.decoding.batch import StepFailed
from webapp.playground.attention import View

if TYPE_CHECKING:
    from webapp.playground.worker.frames import AttentionCopy


@dataclass(frozen=True)
class Job:
    """One decode request as the socket queued it (see services.new_job).

    `reply` is the consumer's channel name; `relay` is the channel of the consumer's web
    process that takes a whole step's frames for all its consumers in one message
    (webapp/playground/relay.py), and the only way its frames reach it.
    """

    request_id: str
    user_id: int
    reply: str
    model_name: str
    model_path: str
    model_hash: str
    source: str
    params: dict[str, Any]  # DecodeParams keyword arguments, checked by the socket
    pace_ms: int
    step_mode: bool
    compare_cache: bool
    tag: str | None
    max_tokens: int
    max_seconds: float
    submitted_at: float  # time.time() when the socket accepted it
    relay: str | None = None
    view: View = View()  # the attention its frames carry (with "attention": true)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Job:
        model = data["model"]
        return cls(
            request_id=str(data["request_id"]), user_id=int(data["user_id"]), reply=str(data["reply"]),
            model_name=str(model["name"]), model_path=str(model["path"]), model_hash=str(model.get("hash", "")),
            source=str(data["source"]), params=dict(data.get("params") or {}), pace_ms=int(data.get("pace_ms", 0)),
            step_mode=bool(data.get("step_mode", False)), compare_cache=bool(data.get("compare_cache", False)),
            tag=data.get("tag"), max_tokens=int(data["max_tokens"]), max_seconds=float(data["max_seconds"]),
            submitted_at=float(data["submitted_at"]), relay=data.get("relay") or None,
            view=View.from_dict(data.get("view")),
        )

    @property
    def private(self) -> bool:
        """Paced and step-mode requests wait between tokens: they get a lane of their own."""
        return self.step_mode or self.pace_ms > 0


@dataclass
class InFlight:
    """A request that has started and not yet ended."""

    job: Job
    lane: Lane
    deadline: float  # time.time() past which it is stopped (step mode: pushed back by each step)
    admitted_at: float
    compare: tuple[list[int], int] | None = None  # compare_cache: its source ids and rows, to look up recompute times
    steps_done: int = 0
    credits: int = 0  # step mode: `step` frames not yet used
    first_token_ms: float | None = None
    pending_recompute_ms: float | None = None
    tokens: list[str] = field(default_factory=list)  # output so far (greedy, sampling), as token strings
    attention: AttentionCopy | None = None  # every layer and head of its attention, when it asked for it


SHARED_LANE_ROWS = 32  # KV-cache rows a shared lane allocates up front: a class joining at once fits


class Lane:
    """One BatchDecoder and the requests it steps; `pace_s` and `step_mode` for a private lane.

    A shared lane allocates its KV cache for a whole class when it is made, and outlives its
    last request for a while (Batcher.SHARED_LANE_IDLE_S): growing the cache as a class joins
    re-allocates and copies every layer's buffers each time the rows double, a pause that
    every student already decoding on that lane would see between two tokens.
    """

    def __init__(self, loaded: LoadedModel, *, pace_s: float = 0.0, step_mode: bool = False,
                 shared: bool = False) -> None:
        self.loaded = loaded
        self.shared = shared
        self.pace_s = pace_s
        self.step_mode = step_mode
        self.next_due = 0.0  # time.monotonic() of a paced lane's next step
        self.in_flight: dict[str, InFlight] = {}
        self.idle_since = time.monotonic()  # when its last request left (shared lanes wait a while)
        self.decoder = self._new_decoder()

    def _new_decoder(self) -> BatchDecoder:
        decoder = open_decoder(self.loaded)
        if self.shared:
            with torch.inference_mode():
                decoder.stepper.reserve(SHARED_LANE_ROWS, self.loaded.config.max_len)
        return decoder

    def rebuild(self) -> list[InFlight]:
        """Start over with an empty decoder (after a step failed half-way); returns the requests it dropped."""
        dropped = list(self.in_flight.values())
        self.in_flight.clear()
        self.decoder = self._new_decoder()
        return dropped

    def due(self, now: float) -> bool:
        if not self.in_flight:
            return False
        if self.step_mode:
            return any(flight.credits > 0 for flight in self.in_flight.values())
        return now >= self.next_due

    def wait_s(self, now: float) -> float | None:
        """Seconds until this lane can step on its own (None: only a `step` frame can make it)."""
        if not self.in_flight or self.step_mode:
            return None
        return max(0.0, self.next_due - now)

    def step(self, now: float) -> tuple[list[Event], float, int, dict[str, Exception]]:
        """One step of every request here: events, milliseconds, rows stepped, requests that failed and left.

        A request whose own token choice fails leaves the decoder and the others' step stands
        (StepFailed); any other exception means the decoder's state is unknown: the caller rebuilds.
        """
        rows = self.decoder.stepper.rows
        started = time.perf_counter()
        failed: dict[str, Exception] = {}
        try:
            events = self.decoder.step()
        except StepFailed as step_failed:
            events, failed = step_failed.events, step_failed.failed
        step_ms = (time.perf_counter() - started) * 1000
        for flight in self.in_flight.values():
            flight.credits = max(0, flight.credits - 1) if self.step_mode else flight.credits
        if self.pace_s:
            self.next_due = now + self.pace_s
        return events, step_ms, rows, failed
