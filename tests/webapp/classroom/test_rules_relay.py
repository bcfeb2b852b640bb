"""What a session's relay does with a run it did not see whole: a hole in its copy, a copy that began mid-run, a
transcript loaded after the run ended, and the worker's copy fetched to fill them (webapp/classroom/relay.py and
session_run.run_gap; the channel layer a list of messages, or the test run's embedded Redis; no worker, no
daphne). Each test reads what the screens were sent."""
from __future__ import annotations

import asyncio
import uuid
from typing import Any

import orjson
import pytest
from channels.layers import get_channel_layer

from tests.fixtures.session_relay import (
    RUN,
    Gaps,
    Screen,
    Session,
    deliver,
    question,
    start,
    state,
    token,
    worker,
)
from webapp.classroom.relay import SessionRelay, event_message, session_group
from webapp.classroom.session_run import STEPS_LOST, run_gap
from webapp.ops.redis_client import app_redis
from webapp.playground import keys
from webapp.playground.protocol import state_text


def done(steps: int, request_id: str = RUN) -> dict[str, Any]:
    return {"type": "done", "request_id": request_id, "steps": steps, "reason": "max_len"}


def seqs_of(frames: list[dict[str, Any]]) -> list[int | None]:
    return [f.get("seq") for f in frames]


async def test_a_relay_that_began_mid_run_asks_for_the_workers_copy_once_when_the_run_ends_not_at_every_step():
    session = Gaps(Screen())
    calls: list[str] = []
    session.relay._on_final = lambda relay, request_id: _noted(calls, f"final {request_id}")
    gap = session.relay._on_gap
    session.relay._on_gap = lambda relay, request_id, ended: _noted(calls, f"gap {request_id} {ended}",
                                                                    gap(relay, request_id, ended))
    session.relay.request_id = RUN  # its screens joined while the run was on: they wait for the worker's copy

    await deliver(session.relay, worker(token(2)), worker(token(4)))
    assert calls == []  # still waiting for the state its join asked for: no second request per step

    await deliver(session.relay, worker(done(5), final=True))
    assert calls == [f"gap {RUN} True", f"final {RUN}"]  # the waiting screens are answered from the worker's copy,
    assert session.holes == [(RUN, True)]  # then the run is recorded


async def _noted(calls: list[str], what: str, then: Any = None) -> None:
    calls.append(what)
    if then is not None:
        await then


async def test_after_a_hole_a_waiting_screen_gets_the_whole_copy_without_the_questions_step_and_that_step_at_the_reveal():
    there, waiting = Screen(), Screen()
    session = Gaps(there)
    await deliver(session.relay, worker(start(), token(0)), question(seq=3), worker(token(2)))  # step 1 was lost
    assert session.holes == [(RUN, False)] and not session.relay.complete
    session.relay.sockets[waiting] = None  # a screen reconnects now: it waits for the repaired copy
    session.relay.waiting.append(waiting)

    await deliver(session.relay, worker(token(3, name="cat")),
                  state(start(), token(0), token(1), token(2), token(3, name="cat")))
    options, shown = waiting.frames  # the question's options (the held step's top-k), then the repaired copy
    assert options == {"type": "options", "question": 5, "options": ["cat", "zz"]} and options in there.frames
    assert shown["type"] == "state" and seqs_of(shown["frames"]) == [None, 0, 1, 2]  # the asked-about step is held
    assert there.seqs() == [0, 2]  # the screen that was there got what arrived, and not the held step either

    await deliver(session.relay, event_message({"type": "reveal", "question": 5, "answer": "cat"}))
    assert waiting.seqs() == there.seqs()[-1:] == [3]  # the held step reaches both just before the reveal
    assert waiting.events[-1]["type"] == there.events[-1]["type"] == "reveal"
    assert not session.relay.waiting


async def test_a_transcript_loaded_after_the_run_ended_keeps_the_questions_step_from_students_until_the_reveal():
    screen = Screen()
    session = Session(screen)
    relay = session.relay
    relay.request_id, relay.question, relay.held_seq = RUN, {"id": 5, "kind": "stop", "seq": 1}, 1  # as start() sets
    run = [start(), token(0), token(1), token(2), done(3)]

    relay.load_ended("another-run", run)
    assert relay.frames == [] and not relay.complete  # another run's transcript is not this one's

    relay.load_ended(RUN, run)
    assert relay.ended and relay.complete
    assert seqs_of(session.late_joiner_sees()) == [None, 0]  # a screen joining now cannot read the answer off it
    assert relay.frame(RUN, 1) == token(1)  # the reveal finds the model's answer here

    relay.load_ended(RUN, [start()])  # a later load does not replace the whole copy
    assert len(relay.frames) == len(run)

    await deliver(relay, event_message({"type": "reveal", "question": 5, "answer": "no"}))
    assert [f["type"] for f in screen.frames] == ["token", "token", "done"] and screen.seqs() == [1, 2]
    assert session.late_joiner_sees() == run


async def test_a_relay_started_while_a_question_is_open_holds_its_step_unless_it_is_multiple_choice():
    """Through the test run's channel layer (pub/sub on the embedded Redis): the worker's message reaches the relay
    as it would from another process."""
    layer = get_channel_layer()
    for kind, shown in [("next_token", [0]), ("choice", [0, 1])]:
        code = f"R{uuid.uuid4().hex[:8]}"
        screen = Screen()
        relay = SessionRelay(code, _nothing)
        relay.sockets[screen] = None
        await relay.start(request_id=RUN, question={"type": "question", "id": 5, "kind": kind, "seq": 1})
        try:
            await layer.group_send(session_group(code), worker(token(0), token(1)))
            await _until(lambda: len(relay.frames) == 2)  # noqa: B023  (each pass waits for its own relay)
            assert screen.seqs() == shown, kind
        finally:
            await relay.stop()


async def _nothing(*_: Any) -> None:
    return None


async def _until(ready: Any, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not ready():
        assert loop.time() < deadline, "the relay never got the worker's message"
        await asyncio.sleep(0.02)


@pytest.fixture
def request_id() -> Any:
    request_id = f"gap-{uuid.uuid4().hex}"
    yield request_id
    app_redis().delete(keys.state_key(request_id), keys.resync_key(request_id))


def ended_with_a_hole(request_id: str) -> tuple[Session, Screen, list[dict[str, Any]]]:
    """A relay whose copy of an ended run misses step 1, and a screen waiting for the whole run."""
    run = [start(request_id), token(0, request_id), token(1, request_id), done(2, request_id)]
    session = Session(Screen())
    relay = session.relay
    relay.request_id, relay.ended = request_id, True
    relay._keep([run[0], run[1], run[3]], [orjson.dumps(f).decode() for f in (run[0], run[1], run[3])])
    waiting = Screen()
    relay.sockets[waiting] = None
    relay.waiting.append(waiting)
    return session, waiting, run


async def test_a_hole_in_an_ended_run_is_filled_from_the_copy_its_worker_kept(request_id):
    session, waiting, run = ended_with_a_hole(request_id)
    app_redis().set(keys.state_key(request_id), state_text(request_id, [orjson.dumps(f).decode() for f in run]))

    await run_gap(session.relay, request_id, ended=True)
    (shown,) = waiting.frames
    assert shown["type"] == "state" and shown["frames"] == run  # every step, none missing
    assert session.relay.complete and session.late_joiner_sees() == run


async def test_a_hole_no_kept_copy_can_fill_reaches_the_waiting_screen_as_a_steps_lost_error(request_id):
    session, waiting, run = ended_with_a_hole(request_id)

    await run_gap(session.relay, request_id, ended=True)  # waits about a second for a copy that never comes
    (shown,) = waiting.frames
    assert seqs_of(shown["frames"][:-1]) == [None, 0, None]  # what reached this process, then why it stops there
    assert shown["frames"][-1] == {"type": "error", "code": "steps_lost", "request_id": request_id,
                                   "message": STEPS_LOST}


async def test_a_hole_in_a_running_run_asks_its_worker_for_its_copy_and_the_screen_waits(request_id):
    session, waiting, _ = ended_with_a_hole(request_id)
    session.relay.ended = False

    await run_gap(session.relay, request_id, ended=False)
    assert app_redis().get(keys.resync_key(request_id)) == b"1"  # the worker answers between two steps
    assert waiting.frames == [] and session.relay.waiting == [waiting]
