"""One decoding loop per worker process: requests join and leave its batch between steps.

Two threads: the loop thread runs an asyncio event loop that waits for jobs, reads the
cancel/step flags from Redis and sends frames through the channel layer (one event loop for
every frame); the compute thread runs the Batcher, so that the frames of one step are on
their way while the next step computes. Celery tasks only hand jobs in (submit) and return.
"""
from __future__ import annotations

import asyncio
import functools
import itertools
import json
import logging
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import redis.asyncio as aioredis
from channels.layers import get_channel_layer
from django.conf import settings

from modelcore.checkpoint import LoadedModel
from webapp.playground import keys
from webapp.playground.attention import View
from webapp.playground.protocol import state_text
from webapp.playground.relay import beat_message, frames_message, relay_send
from webapp.playground.worker import frames
from webapp.playground.worker.batcher import Admission, Batcher, Out, Tick
from webapp.playground.worker.lanes import Job
from webapp.playground.worker.warm import WarmModels

log = logging.getLogger(__name__)

ENDED_TTL_S = 300
# requests to cancel, step credits, requests to resync, views asked for
Control = tuple[set[str], dict[str, int], set[str], dict[str, View]]
MAX_CREDITS_READ = 100
BEAT_S = 1.0  # how often the loop tells each web process which of its requests it still holds


class DecodeLoop:
    """The process's batching loop; start() is idempotent and submit() starts it when needed."""

    def __init__(self, warm: WarmModels) -> None:
        self.warm = warm
        self.batcher = Batcher()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._inbox: asyncio.Queue[Admission | None] | None = None
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._stopping = False
        self._held: dict[str, str] = {}  # request id -> its relay, from submit() until the request ends

    # -- from Celery task threads -----------------------------------------------------------------

    def submit(self, data: dict[str, Any]) -> None:
        """Queue one job (the model is loaded here, in the caller's thread, so the loop never waits on it)."""
        job = Job.from_dict(data)
        if job.relay is not None:  # beats start now: loading a cold model may take longer than the web side waits
            self._held[job.request_id] = job.relay
        loaded: LoadedModel | Exception
        try:
            loaded = self.warm.get(job.model_path, job.model_hash)
        except Exception as error:  # reported to the client as `model_unavailable`
            log.exception("could not load %s", job.model_path)
            loaded = error
        self.start()
        assert self._loop is not None and self._inbox is not None
        self._loop.call_soon_threadsafe(self._inbox.put_nowait, (job, loaded))

    def start(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._ready.clear()
            self._stopping = False
            self._thread = threading.Thread(target=self._run, name="playground-loop", daemon=True)
            self._thread.start()
        self._ready.wait(timeout=30)

    def stop(self, timeout: float = 10) -> None:
        """Tell every running request the worker is stopping, send that, and end the thread."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None or not thread.is_alive():
            return
        self._stopping = True
        assert self._inbox is not None
        loop.call_soon_threadsafe(self._inbox.put_nowait, None)
        thread.join(timeout)

    # -- the loop thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        _limit_threads()
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._inbox = asyncio.Queue()
        outbox: asyncio.Queue[Tick | set[str] | None] = asyncio.Queue()
        client = aioredis.Redis.from_url(settings.REDIS_URL)
        compute = ThreadPoolExecutor(1, thread_name_prefix="playground-compute", initializer=_limit_threads)
        sender = asyncio.create_task(send_forever(outbox, client))
        beats = asyncio.create_task(self._beat_forever(client))
        self._ready.set()
        tick = Tick()
        control: asyncio.Task[Control] | None = None
        try:
            held: list[Admission] = []  # jobs taken from the inbox that no turn has admitted yet
            while not self._stopping:
                try:
                    # A turn that failed before admitting its jobs (Redis away while the control
                    # flags were read) keeps them for the next: a job dropped here would be held
                    # (its web process hearing beats for it) and never run.
                    held += await self._collect(0 if held else tick.wake_in)
                    jobs = held
                    # The flags read while the last turn computed. A turn with work to do does not wait for a read
                    # still on its way (Redis an RTT away, longer than a step's compute: every step would wait one
                    # RTT); it goes on without, and the read's answer counts at the first turn after it comes.
                    if control is not None and (control.done() or not (jobs or tick.wake_in == 0)):
                        cancels, credits, resyncs, views = await control
                        control = None
                    else:
                        cancels, credits, resyncs, views = set(), {}, set(), {}
                    if resyncs:  # in the outbox's order: each state holds every frame sent before it
                        outbox.put_nowait(resyncs)
                    call = functools.partial(self.batcher.tick, jobs=jobs, cancels=cancels, credits=credits,
                                             views=views)
                    turn = self._loop.run_in_executor(compute, call)
                    held = []  # the batcher has them now
                    # Read the flags for the next turn while this one computes (one read at a time): a cancel
                    # sent now stops the request within a step and one round trip to Redis.
                    if control is None:
                        control = asyncio.create_task(self._read_control(client, tick))
                    tick = await turn
                    for ended in tick.ended:
                        self._held.pop(ended.request_id, None)
                    if tick.out or tick.ended or tick.extended:
                        outbox.put_nowait(tick)
                except Exception:  # keep serving: one bad turn must not end every student's decode
                    log.exception("playground loop turn failed")
                    tick, control = Tick(wake_in=0.05), None
            last = await self._loop.run_in_executor(
                compute, self.batcher.stop_all, "worker_stopping", "the worker is shutting down; try again"
            )
            outbox.put_nowait(last)
        finally:
            beats.cancel()
            if control is not None:
                control.cancel()
            outbox.put_nowait(None)
            await sender
            compute.shutdown(wait=False)
            await client.aclose()

    async def _collect(self, wake_in: float | None) -> list[Admission]:
        """The jobs waiting now; when nothing needs a turn yet, wait up to wake_in (None: for the next job)."""
        assert self._inbox is not None
        jobs: list[Admission] = []
        if self._inbox.empty() and wake_in != 0:
            try:
                first = await asyncio.wait_for(self._inbox.get(), timeout=wake_in)
            except TimeoutError:
                return jobs
            if first is not None:
                jobs.append(first)
        while not self._inbox.empty():
            item = self._inbox.get_nowait()
            if item is not None:
                jobs.append(item)
        return jobs

    async def _read_control(self, client: aioredis.Redis, tick: Tick) -> Control:
        """Cancel flags of every request in flight and step credits of step-mode ones, in one round trip."""
        if not tick.in_flight:
            return set(), {}, set(), {}
        pipe = client.pipeline(transaction=False)
        pipe.mget([keys.cancel_key(rid) for rid in tick.in_flight])
        pipe.mget([keys.resync_key(rid) for rid in tick.in_flight])
        pipe.mget([keys.view_key(rid) for rid in tick.in_flight])
        for rid in tick.stepping:
            pipe.lpop(keys.step_key(rid), MAX_CREDITS_READ)
        flags, asked, viewed, *popped = await pipe.execute()
        cancels = {rid for rid, flag in zip(tick.in_flight, flags, strict=True) if flag is not None}
        resyncs = {rid for rid, flag in zip(tick.in_flight, asked, strict=True) if flag is not None}
        views = {rid: View.from_dict(json.loads(raw))
                 for rid, raw in zip(tick.in_flight, viewed, strict=True) if raw}
        if resyncs or views:
            await client.delete(*(keys.resync_key(rid) for rid in resyncs), *(keys.view_key(rid) for rid in views))
        credits = {rid: len(items) for rid, items in zip(tick.stepping, popped, strict=True) if items}
        return cancels, credits, resyncs, views

    async def _beat_forever(self, client: aioredis.Redis) -> None:
        """Every BEAT_S, one message per web process naming the requests this worker holds for it, and each request's
        alive key in Redis (keys.alive_key).

        The web side ends a request whose worker stays silent (webapp/playground/watchdog.py):
        between a paced request's tokens, in step mode or while a model loads, this is all it hears; a web process
        that was itself stalled reads the alive keys before it believes the silence.
        """
        layer = get_channel_layer()
        while True:
            await asyncio.sleep(BEAT_S)
            by_relay: dict[str, list[str]] = defaultdict(list)
            for request_id, relay in list(self._held.items()):
                by_relay[relay].append(request_id)
            try:
                await asyncio.gather(*(relay_send(layer, relay, beat_message(ids)) for relay, ids in by_relay.items()))
                if self._held:
                    pipe = client.pipeline(transaction=False)
                    for request_id in list(self._held):
                        pipe.set(keys.alive_key(request_id), "1", ex=keys.ALIVE_TTL_S)
                    await pipe.execute()
            except Exception:  # Redis away for a moment: the next beat tries again
                log.warning("playground beat could not be sent", exc_info=True)


async def send_forever(outbox: asyncio.Queue[Tick | set[str] | None], client: aioredis.Redis) -> None:
    """Send each turn's frames in order (requests side by side), then record ended requests.

    The turns that queued while the last send crossed to Redis go together, in order: one message per web
    process for all of them, so a Redis an RTT away costs one round trip per send, not one per step (a send
    waits for its publish to be answered). A set in the outbox names requests whose client saw a gap: each
    gets a `state` frame holding every frame sent for it so far, after the frames queued before it. None ends.
    """
    sender = FrameSender(get_channel_layer())
    while True:
        queued = [await outbox.get()]
        while not outbox.empty():
            queued.append(outbox.get_nowait())
        for turns, group in itertools.groupby(queued, key=lambda item: isinstance(item, Tick)):
            for item in [_merged(list(group))] if turns else group:
                if item is None:
                    return
                try:
                    if isinstance(item, set):
                        await sender.send_states(item)
                        continue
                    await sender.send(item.out)
                    finished = sender.take_finished()
                    if item.ended or item.extended or finished:
                        await _record(client, item, finished)
                except Exception:
                    log.exception("playground frames could not be sent")


def _merged(ticks: list[Tick]) -> Tick:
    if len(ticks) == 1:
        return ticks[0]
    return Tick(out=[out for tick in ticks for out in tick.out], ended=[e for tick in ticks for e in tick.ended],
                extended=[x for tick in ticks for x in tick.extended])


def _limit_threads() -> None:
    """OpenMP keeps its thread count per calling thread: set it in each thread that runs torch."""
    import torch

    torch.set_num_threads(settings.PLAYGROUND_TORCH_THREADS)


class FrameSender:
    """Delivers a turn's frames: one channel-layer message per web process, through its relay.

    Every job names the relay of the web process that queued it (webapp/playground/relay.py);
    each relay gets every frame of this turn for that process's sockets in one message, in
    order, and the relay hands each to its socket. A frame whose job names no relay has
    nowhere to go: it is logged and dropped.
    """

    def __init__(self, layer: Any) -> None:
        self.layer = layer
        self._sent: dict[str, list[Out]] = {}  # request id -> its frames sent so far, until its last
        self._finished: dict[str, str] = {}  # request id -> state of a request whose last frame just went

    async def send(self, outs: list[Out]) -> None:
        for out in outs:
            if out.kept:
                self._sent.setdefault(out.request_id, []).append(out)
            if out.final:
                self._finished[out.request_id] = _state_text(out.request_id, self._sent.pop(out.request_id))
        await self._relay(outs)

    async def send_states(self, request_ids: set[str]) -> None:
        """A `state` frame for each of these running requests: every frame sent for it so far."""
        outs = []
        for request_id in request_ids:
            sent = self._sent.get(request_id)
            if sent:
                last = sent[-1]
                outs.append(Out(last.reply, request_id, False, _state_text(request_id, sent), last.relay))
        await self._relay(outs)

    async def _relay(self, outs: list[Out]) -> None:
        """One message to each relay holding its frames of `outs`, in order."""
        relayed: dict[str, list[Out]] = defaultdict(list)
        for out in outs:
            if out.relay is None:
                log.error("request %s has no relay to send its frames to", out.request_id)
            else:
                relayed[out.relay].append(out)
        await asyncio.gather(*(relay_send(self.layer, relay, _relay_message(group))
                               for relay, group in relayed.items()))

    def take_finished(self) -> dict[str, str]:
        """The states of the requests that ended since the last call, for a late resync (keys.state_key)."""
        finished, self._finished = self._finished, {}
        return finished


def _state_text(request_id: str, outs: list[Out]) -> str:
    """The `state` frame of these frames (protocol.state_text), or an error frame when it would not fit a message."""
    text = state_text(request_id, (o.text for o in outs))
    if frames.too_large(text):
        message = f"this request's state would exceed the {frames.MAX_FRAME_BYTES:,} bytes a message may hold"
        return frames.dumps(frames.error_frame("frame_too_large", message, request_id=request_id))
    return text


def _relay_message(outs: list[Out]) -> dict[str, Any]:
    return frames_message([(out.reply, out.request_id, out.final, out.text) for out in outs])


async def _record(client: aioredis.Redis, tick: Tick, states: dict[str, str]) -> None:
    """Free ended requests' slots, note why they ended, keep their frames a while, push back step-mode slots."""
    pipe = client.pipeline(transaction=False)
    for request_id, state in states.items():
        pipe.set(keys.state_key(request_id), state, ex=ENDED_TTL_S)
    for ended in tick.ended:
        if ended.attention is not None and ended.attention.steps:
            pipe.set(keys.attention_key(ended.request_id), ended.attention.packed(), ex=ENDED_TTL_S)
        pipe.zrem(keys.running_key(ended.user_id), ended.request_id)
        pipe.set(keys.ended_key(ended.request_id), json.dumps({"reason": ended.reason, "steps": ended.steps}),
                 ex=ENDED_TTL_S)
        pipe.delete(keys.cancel_key(ended.request_id), keys.step_key(ended.request_id),
                    keys.resync_key(ended.request_id), keys.view_key(ended.request_id))
    for user_id, request_id, expires in tick.extended:
        pipe.zadd(keys.running_key(user_id), {request_id: expires}, xx=True)
    await pipe.execute()


@functools.lru_cache(maxsize=1)
def decode_loop() -> DecodeLoop:
    """This process's loop (created on first use; a forked child builds its own)."""
    return DecodeLoop(WarmModels(settings.PLAYGROUND_WARM_MODELS, settings.MODELCORE_DEVICE))


def warm_up(loop: DecodeLoop, paths: list[str]) -> list[str]:
    """Load these model folders and run two steps on each, so the first student waits for neither."""
    from pathlib import Path

    from modelcore.checkpoint import WEIGHTS_FILE, file_hash
    from modelcore.decoding import DecodeParams, decode_stream

    warmed = []
    for path in paths:
        started = time.perf_counter()
        try:
            loaded = loop.warm.get(path, file_hash(Path(path) / WEIGHTS_FILE))
            for _ in decode_stream(loaded, [4, 5, 6], DecodeParams(max_len=2, capture_attention=True)):
                pass
        except Exception:  # a broken shipped folder must not keep the worker from serving the others
            log.exception("could not preload %s", path)
            continue
        warmed.append(path)
        log.info("playground: %s warm (%.0f ms)", path, (time.perf_counter() - started) * 1000)
    loop.start()
    return warmed
