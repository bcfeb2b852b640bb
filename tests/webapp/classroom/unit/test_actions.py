"""The socket's actions that refuse, or shape an event, from the session's state and the relay alone, and the
console's frame kinds each with its one handler. Nothing runs but webapp/classroom/actions.py, on a hand-made session
state and a relay nothing feeds: no database, Redis, worker or socket."""
from __future__ import annotations

from typing import Any

import pytest

from webapp.classroom import actions
from webapp.classroom.errors import ClassroomError
from webapp.classroom.models import LiveSession, SessionState
from webapp.classroom.relay import SessionRelay, event_message

RUN = "run-1"


class Caller:
    """A socket as actions see it."""

    code = "ABCD"
    user = None
    user_id = 5
    session_id = 1
    seated = True
    closing = False
    language = "en"

    def __init__(self, *, drives: bool) -> None:
        self.drives = drives
        self.relay = SessionRelay(self.code, on_final=None)
        self.errors: list[tuple[str, str]] = []

    async def send(self, text_data: str) -> None:
        raise AssertionError("nothing is sent here")

    async def send_error(self, code: str, message: str) -> None:
        self.errors.append((code, message))


def live(**state: Any) -> LiveSession:
    return LiveSession(code="ABCD", model_name="tiny", state=SessionState(**state).to_json())


STEPPING = {"request_id": RUN, "running": True, "params": {"strategy": "greedy", "step_mode": True}}


@pytest.mark.parametrize("state", [{}, {"request_id": RUN, "running": True}, {**STEPPING, "running": False}])
async def test_step_is_refused_without_a_running_step_by_step_run(state):
    with pytest.raises(ClassroomError) as refused:
        await actions.console_step(Caller(drives=True), live(**state), {"type": "step"})
    assert refused.value.code == "not_stepping"


async def test_step_is_refused_once_the_run_ended_here_though_the_session_has_not_heard_yet():
    caller = Caller(drives=True)
    caller.relay.request_id, caller.relay.ended = RUN, True
    with pytest.raises(ClassroomError) as refused:
        await actions.console_step(caller, live(**STEPPING), {"type": "step"})
    assert refused.value.code == "not_stepping"


async def test_cancel_with_nothing_running_is_refused():
    with pytest.raises(ClassroomError) as refused:
        await actions.console_cancel(Caller(drives=True), live(request_id=RUN), {"type": "cancel"})
    assert refused.value.code == "not_running"


def test_a_model_question_needs_the_runs_start_here_and_no_question_holding_a_step():
    relay = SessionRelay("ABCD", on_final=None)
    relay.request_id = RUN
    state = SessionState(**STEPPING)
    with pytest.raises(ClassroomError, match="Step"):
        actions._next_step(relay, state, "stop")  # no `start` seen here yet
    relay.start_parsed, relay.steps_seen = {"type": "start", "src_tokens": ["a", "b"]}, 3
    assert actions._next_step(relay, state, "stop") == (RUN, 3, ["yes", "no"])
    relay.held_seq = 3
    with pytest.raises(ClassroomError) as refused:
        actions._next_step(relay, state, "stop")
    assert refused.value.code == "question_open"


async def test_an_event_reaches_the_role_it_is_for_and_a_student_sees_no_names():
    console, student = Caller(drives=True), Caller(drives=False)
    counts = event_message({"type": "answers", "question": 1, "counts": {}, "total": 0}, to="console")
    assert await actions.event_frame(student, counts) is None
    assert (await actions.event_frame(console, counts))["type"] == "answers"
    presence = event_message({"type": "presence", "count": 2, "names": ["ann", "bob"]})
    assert await actions.event_frame(student, presence) == {"type": "presence", "count": 2}
    assert (await actions.event_frame(console, presence))["names"] == ["ann", "bob"]


async def test_a_reveal_tells_each_student_their_own_result():
    reveal = event_message({"type": "reveal", "question": 1, "answer": "cat"}, results={"5": [True, 3], "6": [False, 1]})
    shown = await actions.event_frame(Caller(drives=False), reveal)
    assert shown["you"] == {"answered": True, "correct": True, "score": 3}
    assert "you" not in reveal["frame"]  # the message every socket of the process shares is left as it came


def test_every_console_frame_kind_has_its_one_handler_and_the_socket_takes_exactly_those():
    from webapp.classroom.consumers import ClassroomSocket

    assert set(actions.CONSOLE) == set(actions.CONSOLE_ACTIONS)
    assert all(callable(handler) and handler.__name__ == f"console_{kind}" for kind, handler in actions.CONSOLE.items())
    assert set(ClassroomSocket.frame_types) == {*actions.CONSOLE_ACTIONS, "answer", "add_seed", "resync"}
