"""A run whose `done` never reached this web process (its relay began following after the end, or the process was
too busy to read the end in time) while the session still says it runs: the worker kept its copy, so the run is kept
from that copy and every waiting screen gets all its steps. It is not called `worker_lost` (seen under load in the
rolling-restart test: a screen's whole run replaced by that error)."""
from __future__ import annotations

import json

import orjson
import pytest
from channels.db import database_sync_to_async

from tests.fixtures.session_relay import Screen
from tests.fixtures.waiting import wait_until_async

pytestmark = [pytest.mark.django_db(transaction=True)]

RUN = "run-unheard"


async def test_a_run_ended_by_its_worker_but_unheard_here_is_kept_from_the_workers_copy_not_lost(session, settings):
    from webapp.classroom import session_run
    from webapp.classroom.models import LiveSession
    from webapp.classroom.relay import SessionRelay
    from webapp.ops.redis_client import app_redis
    from webapp.playground import keys

    settings.PLAYGROUND_WORKER_LOST_S = 0.5
    state = {"source": "a b c", "params": {}, "request_id": RUN, "running": True, "tokens": [], "driver": None}
    await database_sync_to_async(session_run._run_begin)(session, session.model_name, state, RUN)
    frames = [{"type": "start", "request_id": RUN},
              *({"type": "token", "request_id": RUN, "seq": i, "token": t} for i, t in enumerate("cba")),
              {"type": "done", "request_id": RUN, "text": "c b a", "reason": "eos"}]
    app_redis().set(keys.state_key(RUN), json.dumps({"type": "state", "request_id": RUN, "frames": frames}), ex=60)

    relay = SessionRelay(session.code, on_final=session_run.run_record)
    relay.request_id = RUN  # following the run, nothing heard of it here
    screen = Screen()
    relay.sockets[screen] = None
    relay.waiting.append(screen)
    session_run.watch_run(relay, RUN)  # the loop's watch finds it silent past PLAYGROUND_WORKER_LOST_S
    await wait_until_async(lambda: screen.frames, "the waiting screen got the run", timeout=5)

    assert [f["type"] for f in screen.frames] == ["state"]
    shown = screen.frames[0]["frames"]
    assert [f["seq"] for f in shown if f["type"] == "token"] == [0, 1, 2] and shown[-1]["type"] == "done"
    assert not any(f["type"] == "error" for f in shown)
    kept = await database_sync_to_async(session_run.transcript_frames)(RUN)
    assert kept == frames  # the history replays the whole run
    fresh = await database_sync_to_async(LiveSession.objects.get)(pk=session.pk)
    assert not fresh.state.get("running")


async def test_a_run_that_ends_before_a_mid_run_relay_holds_all_of_it_answers_its_waiting_screens(session):
    """A web process whose sockets all reconnected near a run's end (a proxy restart) follows it afresh: its relay
    asked the worker for the run's state, but the ask reached the worker after the last step, so no answer comes.
    When the run's `done` arrives, the screens waiting for the state get the worker's whole copy (seen under load in
    the rolling-restart test: every screen of one process stuck at step 49 of 60 until the test gave up)."""
    from webapp.classroom import session_run
    from webapp.classroom.relay import SessionRelay
    from webapp.ops.redis_client import app_redis
    from webapp.playground import keys

    run = "run-ends-mid-follow"
    state = {"source": "a b c d", "params": {}, "request_id": run, "running": True, "tokens": [], "driver": None}
    await database_sync_to_async(session_run._run_begin)(session, session.model_name, state, run)
    frames = [{"type": "start", "request_id": run},
              *({"type": "token", "request_id": run, "seq": i, "token": t} for i, t in enumerate("dcba")),
              {"type": "done", "request_id": run, "text": "d c b a", "reason": "eos"}]
    app_redis().set(keys.state_key(run), json.dumps({"type": "state", "request_id": run, "frames": frames}), ex=60)

    relay = SessionRelay(session.code, on_final=session_run.run_record, on_gap=session_run.run_gap)
    relay.request_id = run  # joined mid-run: nothing of it held here yet, the resync unanswered
    screen = Screen()
    relay.sockets[screen] = None
    relay.waiting.append(screen)
    for i, frame in enumerate(frames[3:], start=3):
        await relay._frame(run, i == len(frames) - 1, orjson.dumps(frame).decode())

    states = [f for f in screen.frames if f["type"] == "state"]
    assert len(states) == 1, [f["type"] for f in screen.frames]
    assert states[0]["frames"] == frames  # every step, from the worker's copy
    assert not relay.waiting and relay.complete
    assert orjson.loads(relay.state_text())["frames"] == frames  # a screen joining now gets the whole run at once


async def test_the_last_screen_leaving_right_after_done_does_not_cancel_keeping_the_run():
    """The relay stops (its pump cancelled) when its last socket leaves, which a class does as soon as `done` shows
    on its screens: the run's transcript, being kept at that moment, is still kept (seen once in a full test run: a
    Redis-outage run whose three screens had all 60 steps left an empty history)."""
    import asyncio

    from webapp.classroom.relay import SessionRelay

    kept: list[str] = []
    keeping, written = asyncio.Event(), asyncio.Event()

    async def keep_slowly(relay: SessionRelay, request_id: str) -> None:
        keeping.set()
        await written.wait()  # the worker's copy and the database write, still under way as the relay stops
        kept.append(request_id)

    relay = SessionRelay("CODE", on_final=keep_slowly)
    relay.request_id, relay.complete = "run-left", True
    pump = asyncio.ensure_future(relay._frame("run-left", True, orjson.dumps({"type": "done", "steps": 0}).decode()))
    await asyncio.wait_for(keeping.wait(), 5)
    pump.cancel()  # the relay's stop
    written.set()
    await wait_until_async(lambda: kept, "the run kept though its relay stopped", timeout=5)
    assert pump.cancelled() and kept == ["run-left"]
