"""A session's relay in one web process: what each screen is shown, what is held for a question until the reveal
(also in a copy repaired after a hole or loaded after the run ended), what a late joiner's state holds, how a worker's
`state` repairs a record that began mid-run, and a hole filled from the worker's kept copy or named by a `steps_lost`
error (session_run.run_gap). Nothing runs but webapp/classroom/relay.py and run_gap: the channel layer is a stub, a
list of messages (tests/fixtures/session_relay.py), except where a test uses the test run's embedded Redis (a relay
started on the real channel layer; the worker's kept copy run_gap reads); no worker, web server or database. Each
test reads what the screens were sent."""
from __future__ import annotations

import asyncio
import time
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
from webapp.playground.relay import beat_message


def done(steps: int, request_id: str = RUN, **extra: Any) -> dict[str, Any]:
    return {"type": "done", "request_id": request_id, "steps": steps, "reason": "max_len", **extra}


def sent(screen: Screen, kind: str) -> list[dict[str, Any]]:
    """The frames of this type the screen was sent, in order."""
    return [f for f in screen.frames if f["type"] == kind]


def seqs_of(frames: list[dict[str, Any]]) -> list[int | None]:
    return [f.get("seq") for f in frames]


async def test_every_screen_gets_each_step_once_in_the_workers_order_and_a_late_joiner_gets_them_all():
    a, b = Screen(), Screen()
    session = Session(a, b)
    await deliver(session.relay, worker(start(), token(0)), worker(token(1)), worker(token(2), final=True))

    assert a.seqs() == b.seqs() == [0, 1, 2]
    assert a.frames[0]["type"] == "start"
    assert session.runs == [RUN] and session.ended == [RUN] and session.relay.ended
    assert session.late_joiner_sees() == [start(), token(0), token(1), token(2)]
    assert session.relay.steps_seen == 3
    assert session.relay.frame(RUN, 1) == token(1)
    assert session.relay.frame("another-run", 1) is None and session.relay.frame(RUN, 7) is None


async def test_the_step_a_question_is_about_and_those_after_it_wait_for_the_reveal():
    screen = Screen()
    session = Session(screen)
    await deliver(session.relay, worker(start(), token(0), token(1)), question(seq=2),
                  worker(token(2, name="cat")), worker(token(3)))

    assert screen.seqs() == [0, 1]  # students cannot read the answer off their screens
    options = sent(screen, "options")
    assert options == [{"type": "options", "question": 5, "options": ["cat", "zz"]}]  # the top-k, no probabilities
    assert seqs_of(session.late_joiner_sees()) == [None, 0, 1]  # nor can one who joins now
    assert session.relay.frame(RUN, 2) == token(2, name="cat")  # the reveal reads the model's answer here

    await deliver(session.relay, event_message({"type": "reveal", "question": 5, "answer": "cat"}))
    assert screen.seqs() == [0, 1, 2, 3]  # released in order, before the reveal itself
    assert screen.events[-1]["type"] == "reveal"
    assert seqs_of(session.late_joiner_sees()) == [None, 0, 1, 2, 3]


async def test_a_question_closed_without_a_reveal_releases_the_held_steps_too():
    screen = Screen()
    session = Session(screen)
    await deliver(session.relay, worker(start(), token(0)), question(seq=1, kind="stop"), worker(token(1)),
                  event_message({"type": "question_closed", "question": 5}))
    assert screen.seqs() == [0, 1]
    assert not sent(screen, "options")  # only a next-token question lists options


async def test_a_relay_that_began_mid_run_takes_the_workers_state_and_answers_those_waiting_for_it():
    early, waiting = Screen(), Screen()
    session = Session(early, waiting)
    session.relay.request_id = RUN  # joined while the run was on: its first frames went before this relay was here
    await deliver(session.relay, worker(token(2)))
    assert not session.relay.complete and session.relay.steps_seen == 1
    session.relay.waiting.append(waiting)

    await deliver(session.relay, state(start(), token(0), token(1), token(2), request_id="an-older-run"))
    assert not session.relay.complete  # another run's state changes nothing

    await deliver(session.relay, state(start(), token(0), token(1), token(2)), worker(token(3)))
    assert session.relay.complete and session.relay.steps_seen == 4
    assert session.late_joiner_sees() == [start(), token(0), token(1), token(2), token(3)]
    assert waiting.frames[1]["type"] == "state"  # the repaired record, then the run goes on as usual
    assert [f["seq"] for f in waiting.frames[1]["frames"] if f["type"] == "token"] == [0, 1, 2]
    assert waiting.seqs() == [2, 3] and not session.relay.waiting
    assert session.relay.frame(RUN, 0) == token(0)


async def test_a_state_that_knows_less_than_the_relay_does_not_take_frames_away():
    session = Session(Screen())
    await deliver(session.relay, worker(start(), token(0), token(1)), state(start(), token(0)))
    assert seqs_of(session.late_joiner_sees()) == [None, 0, 1]


async def test_a_new_run_starts_a_new_record_and_forgets_the_last_ones_held_step():
    screen = Screen()
    session = Session(screen)
    await deliver(session.relay, worker(start(), token(0)), question(seq=1, kind="stop"), worker(token(1)))
    await deliver(session.relay, worker(start("run-2"), token(0, "run-2"), token(1, "run-2")))
    assert session.runs == [RUN, "run-2"] and session.relay.complete
    assert session.late_joiner_sees() == [start("run-2"), token(0, "run-2"), token(1, "run-2")]
    assert [f["request_id"] for f in sent(screen, "token")] == [RUN, "run-2", "run-2"]


async def test_a_beat_for_the_current_run_counts_as_its_worker_alive_and_no_other_does():
    session = Session(Screen())
    await deliver(session.relay, worker(start(), token(0)))
    session.relay.heard = 0.0
    await deliver(session.relay, beat_message(["another-run"]))
    assert session.relay.heard == 0.0
    await deliver(session.relay, beat_message([RUN]))
    assert session.relay.heard > time.monotonic() - 60


async def test_a_screen_that_is_closing_does_not_keep_the_others_from_their_frames():
    closing, fine = Screen(broken=True), Screen()
    session = Session(closing, fine)
    await deliver(session.relay, worker(start(), token(0)), worker(token(1)))
    assert fine.seqs() == [0, 1]


async def test_an_ended_runs_attention_view_is_kept_for_screens_that_join_later():
    session = Session(Screen())
    view = {"type": "attention", "request_id": RUN, "view": "self"}
    await deliver(session.relay, worker(start(), token(0), final=True), event_message(view),
                  event_message({**view, "request_id": "another-run"}))
    assert session.late_joiner_sees()[-1] == view and len(session.late_joiner_sees()) == 3


async def test_a_step_lost_on_its_way_makes_the_copy_incomplete_until_the_workers_whole_copy_arrives():
    screen = Screen()
    session = Gaps(screen)
    await deliver(session.relay, worker(start(), token(0)), worker(token(3)))  # steps 1 and 2 never came
    assert session.holes == [(RUN, False)]  # the worker is asked for its copy
    assert not session.relay.complete  # so a screen that joins or resyncs now waits for it, not for this copy

    await deliver(session.relay, state(start(), token(0), token(1), token(2), token(3)), worker(token(4)))
    assert session.relay.complete and session.holes == [(RUN, False)]
    assert seqs_of(session.late_joiner_sees()) == [None, 0, 1, 2, 3, 4]


async def test_a_done_that_counts_more_steps_than_arrived_is_a_hole_of_an_ended_run():
    session = Gaps(Screen())
    await deliver(session.relay, worker(start(), token(0), token(1)), worker(done(3, text="t0 t1 t2"), final=True))
    assert session.holes == [(RUN, True)] and session.ended == [RUN]
    assert not session.relay.complete


async def test_steps_in_order_and_a_done_that_counts_them_are_no_hole():
    session = Gaps(Screen())
    await deliver(session.relay, worker(start(), token(0), token(1)), worker(done(2, text="t0 t1"), final=True))
    assert session.holes == [] and session.relay.complete


async def test_when_the_step_a_question_is_about_is_lost_the_steps_after_it_still_wait_for_the_reveal():
    screen = Screen()
    session = Gaps(screen)
    await deliver(session.relay, worker(start(), token(0), token(1)), question(seq=2),
                  worker(token(3)), worker(token(4)))  # step 2, the question's, never came
    assert screen.seqs() == [0, 1]  # nothing past the question reached a student before the reveal
    assert seqs_of(session.late_joiner_sees()) == [None, 0, 1]
    assert not sent(screen, "options")  # not step 3's top-k offered as step 2's
    assert session.holes == [(RUN, False)]

    # The worker's whole copy brings the question's step: its top-k are offered, it and what follows stay held.
    await deliver(session.relay, state(start(), token(0), token(1), token(2, name="cat"), token(3), token(4)))
    assert sent(screen, "options") == [{"type": "options", "question": 5,
                                                                      "options": ["cat", "zz"]}]
    assert screen.seqs() == [0, 1] and seqs_of(session.late_joiner_sees()) == [None, 0, 1]

    await deliver(session.relay, event_message({"type": "reveal", "question": 5, "answer": "cat"}))
    assert screen.seqs() == [0, 1, 2, 3, 4]


async def test_when_the_questions_step_is_lost_a_view_change_that_shows_it_waits_for_the_reveal_too():
    screen = Screen()
    session = Gaps(screen)
    await deliver(session.relay, worker(start(), token(0), token(1)), question(seq=2))  # step 2 never comes here
    early = {"type": "attention", "request_id": RUN, "view": {"head": 1}, "steps": [{"s": 0}, {"s": 1}]}
    await deliver(session.relay, worker(early))
    assert sent(screen, "attention") == [early]  # the steps before the question: shown
    # The console changes the view: the worker answers with every step so far, the question's own among them.
    shows = {"type": "attention", "request_id": RUN, "view": {"head": 0}, "steps": [{"s": 0}, {"s": 1}, {"s": 2}]}
    await deliver(session.relay, worker(shows), event_message(shows))  # by the decode's path and the session's
    assert sent(screen, "attention") == [early]
    assert shows not in screen.events and shows not in session.late_joiner_sees()
    await deliver(session.relay, worker(done(3, text="t0 t1 cat"), final=True))
    assert not sent(screen, "done")  # its text holds the question's token

    await deliver(session.relay, event_message({"type": "reveal", "question": 5, "answer": "cat"}))
    assert [f["type"] for f in screen.frames[-3:]] == ["attention", "attention", "done"]  # released at the reveal



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
    assert seqs_of(session.late_joiner_sees()) == [None, 0, 1, 2]  # the repaired record keeps it held too
    await deliver(session.relay, worker(token(4)))
    assert there.seqs() == [0, 2] and waiting.seqs() == []  # and the steps after it

    await deliver(session.relay, event_message({"type": "reveal", "question": 5, "answer": "cat"}))
    assert waiting.seqs() == there.seqs()[-2:] == [3, 4]  # the held steps reach both just before the reveal
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
