"""A session's relay in one web process: what each screen is shown, what is held for a question, what a late
joiner's state holds, and how a worker's `state` repairs a record that began mid-run (no services: the
channel layer is a list of messages)."""
from __future__ import annotations

import time

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
from webapp.classroom.relay import event_message
from webapp.playground.relay import beat_message


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
    options = [f for f in screen.frames if f["type"] == "options"]
    assert options == [{"type": "options", "question": 5, "options": ["cat", "zz"]}]  # the top-k, no probabilities
    assert [f.get("seq") for f in session.late_joiner_sees()] == [None, 0, 1]  # nor can one who joins now
    assert session.relay.frame(RUN, 2) == token(2, name="cat")  # the reveal reads the model's answer here

    await deliver(session.relay, event_message({"type": "reveal", "question": 5, "answer": "cat"}))
    assert screen.seqs() == [0, 1, 2, 3]  # released in order, before the reveal itself
    assert screen.events[-1]["type"] == "reveal"
    assert [f.get("seq") for f in session.late_joiner_sees()] == [None, 0, 1, 2, 3]


async def test_a_question_closed_without_a_reveal_releases_the_held_steps_too():
    screen = Screen()
    session = Session(screen)
    await deliver(session.relay, worker(start(), token(0)), question(seq=1, kind="stop"), worker(token(1)),
                  event_message({"type": "question_closed", "question": 5}))
    assert screen.seqs() == [0, 1]
    assert not [f for f in screen.frames if f["type"] == "options"]  # only a next-token question lists options


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
    assert [f.get("seq") for f in session.late_joiner_sees()] == [None, 0, 1]


async def test_a_state_keeps_a_held_step_held():
    screen = Screen()
    session = Session(screen)
    session.relay.request_id = RUN
    await deliver(session.relay, question(seq=1), worker(token(1)),
                  state(start(), token(0), token(1)), worker(token(2)))
    assert [f.get("seq") for f in session.late_joiner_sees()] == [None, 0]
    assert 2 not in screen.seqs()


async def test_a_new_run_starts_a_new_record_and_forgets_the_last_ones_held_step():
    screen = Screen()
    session = Session(screen)
    await deliver(session.relay, worker(start(), token(0)), question(seq=1, kind="stop"), worker(token(1)))
    await deliver(session.relay, worker(start("run-2"), token(0, "run-2"), token(1, "run-2")))
    assert session.runs == [RUN, "run-2"] and session.relay.complete
    assert session.late_joiner_sees() == [start("run-2"), token(0, "run-2"), token(1, "run-2")]
    assert [f["request_id"] for f in screen.frames if f["type"] == "token"] == [RUN, "run-2", "run-2"]


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
    assert [f.get("seq") for f in session.late_joiner_sees()] == [None, 0, 1, 2, 3, 4]


async def test_a_done_that_counts_more_steps_than_arrived_is_a_hole_of_an_ended_run():
    session = Gaps(Screen())
    done = {"type": "done", "request_id": RUN, "steps": 3, "text": "t0 t1 t2"}
    await deliver(session.relay, worker(start(), token(0), token(1)), worker(done, final=True))
    assert session.holes == [(RUN, True)] and session.ended == [RUN]
    assert not session.relay.complete


async def test_steps_in_order_and_a_done_that_counts_them_are_no_hole():
    session = Gaps(Screen())
    done = {"type": "done", "request_id": RUN, "steps": 2, "text": "t0 t1"}
    await deliver(session.relay, worker(start(), token(0), token(1)), worker(done, final=True))
    assert session.holes == [] and session.relay.complete


async def test_when_the_step_a_question_is_about_is_lost_the_steps_after_it_still_wait_for_the_reveal():
    screen = Screen()
    session = Gaps(screen)
    await deliver(session.relay, worker(start(), token(0), token(1)), question(seq=2),
                  worker(token(3)), worker(token(4)))  # step 2, the question's, never came
    assert screen.seqs() == [0, 1]  # nothing past the question reached a student before the reveal
    assert [f.get("seq") for f in session.late_joiner_sees()] == [None, 0, 1]
    assert not [f for f in screen.frames if f["type"] == "options"]  # not step 3's top-k offered as step 2's
    assert session.holes == [(RUN, False)]

    # The worker's whole copy brings the question's step: its top-k are offered, it and what follows stay held.
    await deliver(session.relay, state(start(), token(0), token(1), token(2, name="cat"), token(3), token(4)))
    assert [f for f in screen.frames if f["type"] == "options"] == [{"type": "options", "question": 5,
                                                                      "options": ["cat", "zz"]}]
    assert screen.seqs() == [0, 1] and [f.get("seq") for f in session.late_joiner_sees()] == [None, 0, 1]

    await deliver(session.relay, event_message({"type": "reveal", "question": 5, "answer": "cat"}))
    assert screen.seqs() == [0, 1, 2, 3, 4]


async def test_when_the_questions_step_is_lost_a_view_change_that_shows_it_waits_for_the_reveal_too():
    screen = Screen()
    session = Gaps(screen)
    await deliver(session.relay, worker(start(), token(0), token(1)), question(seq=2))  # step 2 never comes here
    early = {"type": "attention", "request_id": RUN, "view": {"head": 1}, "steps": [{"s": 0}, {"s": 1}]}
    await deliver(session.relay, worker(early))
    assert [f for f in screen.frames if f["type"] == "attention"] == [early]  # the steps before the question: shown
    # The console changes the view: the worker answers with every step so far, the question's own among them.
    shows = {"type": "attention", "request_id": RUN, "view": {"head": 0}, "steps": [{"s": 0}, {"s": 1}, {"s": 2}]}
    await deliver(session.relay, worker(shows), event_message(shows))  # by the decode's path and the session's
    assert [f for f in screen.frames if f["type"] == "attention"] == [early]
    assert shows not in screen.events and shows not in session.late_joiner_sees()
    done = {"type": "done", "request_id": RUN, "steps": 3, "text": "t0 t1 cat"}
    await deliver(session.relay, worker(done, final=True))
    assert not [f for f in screen.frames if f["type"] == "done"]  # its text holds the question's token

    await deliver(session.relay, event_message({"type": "reveal", "question": 5, "answer": "cat"}))
    assert [f["type"] for f in screen.frames[-3:]] == ["attention", "attention", "done"]  # released at the reveal
