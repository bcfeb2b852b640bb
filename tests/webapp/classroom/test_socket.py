"""`/ws/classroom/<code>/` against a real Celery worker and a real Redis: broadcast, questions, late joiners."""
from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async as db

from tests.fixtures.classroom import collect, seat, until
from tests.fixtures.playground import SOURCE
from tests.fixtures.waiting import wait_until_async

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]

RUN = {"type": "run", "source": SOURCE, "min_len": 6, "max_len": 6}


def tokens(frames):
    return [f for f in frames if f["type"] == "token"]


async def test_a_run_reaches_every_participant_in_order(worker, session, instructor, make_student):
    console, first = await seat(session, instructor)
    assert first["role"] == "console"
    a, b = await db(make_student)("ann"), await db(make_student)("bob")
    ws_a, snap = await seat(session, a)
    assert snap["role"] == "student" and "scores" not in snap
    ws_b, _ = await seat(session, b)
    await console.send_json_to({"type": "run", "source": SOURCE, "max_len": 6})
    seen = []
    for ws in (console, ws_a, ws_b):
        frames = [f for f in await collect(ws) if f["type"] in ("start", "token", "done")]
        seen.append(frames)
        assert frames[0]["type"] == "start" and frames[-1]["type"] == "done"
        assert [f["seq"] for f in tokens(frames)] == list(range(len(tokens(frames))))
    assert seen[0] == seen[1] == seen[2]
    for ws in (console, ws_a, ws_b):
        await ws.disconnect()


async def started(ws, request_id=None):
    return await until(ws, "start")


async def test_console_frames_from_anyone_but_the_sessions_instructor_are_refused(worker, session, instructor,
                                                                                 admin, make_student, django_user_model):
    from django.contrib.auth.models import Group

    @db
    def other_teacher():
        user = django_user_model.objects.create_user(username="other-teacher", password="pw-for-tests-only")
        user.groups.add(Group.objects.get_or_create(name="instructors")[0])
        return user

    student = await db(make_student)("ann")
    for user in (student, await other_teacher()):
        ws, snapshot = await seat(session, user)
        assert snapshot["role"] == "student"
        for action in ("run", "step", "cancel", "views", "question", "reveal", "close_question", "end"):
            await ws.send_json_to({"type": action})
            frame = await until(ws, "error")
            assert frame["code"] == "forbidden", (user, action, frame)
        await ws.send_to(text_data="{not json")
        assert (await until(ws, "error"))["code"] == "bad_json"  # and the socket is still there to say it
        await ws.disconnect()
    ws, snapshot = await seat(session, admin)  # admins drive any session
    assert snapshot["role"] == "console"
    await ws.send_json_to({"type": "views", "views": ["cross", "kv"], "layer": 0, "head": 1})
    assert (await until(ws, "views")) == {"type": "views", "views": ["cross", "kv"], "layer": 0, "encoder_layer": None,
                                          "head": 1}
    await ws.disconnect()


async def test_anonymous_and_foreign_origin_sockets_are_refused_and_a_wrong_code_is_not_found(session, student):
    from tests.fixtures.sockets import socket_for

    anonymous = await socket_for(f"/ws/classroom/{session.code}/")
    assert not (await anonymous.connect())[0]
    foreign = await socket_for(f"/ws/classroom/{session.code}/", student, origin=(b"origin", b"http://evil.example"))
    assert not (await foreign.connect())[0]
    wrong = await socket_for("/ws/classroom/ZZZZZZ9/", student)
    assert (await wrong.connect())[0]
    assert (await until(wrong, "error"))["code"] == "not_found"
    assert (await wrong.receive_output(timeout=5))["type"] == "websocket.close"


async def test_a_question_holds_its_step_until_the_reveal_and_counts_each_answer_once(worker, session, instructor,
                                                                                      make_student):
    console, _ = await seat(session, instructor)
    ann, bob = await db(make_student)("ann"), await db(make_student)("bob")
    ws_a, _ = await seat(session, ann)
    ws_b, _ = await seat(session, bob)
    await console.send_json_to({"type": "run", "source": SOURCE, "step_mode": True, "min_len": 4, "max_len": 4})
    start = await until(console, "start")
    for ws in (ws_a, ws_b):
        assert (await until(ws, "start"))["request_id"] == start["request_id"]
    await console.send_json_to({"type": "step"})
    first = await until(ws_a, "token")
    assert first["seq"] == 0
    await console.send_json_to({"type": "question", "kind": "next_token"})
    question = await until(ws_a, "question")
    assert question["seq"] == 1 and question["kind"] == "next_token"
    options = await until(ws_a, "options")  # the model's top-k at the held step, without probabilities
    assert options["options"] and all(isinstance(o, str) for o in options["options"])
    assert await ws_a.receive_nothing(timeout=0.5)  # the step itself is held back
    choice = options["options"][0]
    await ws_a.send_json_to({"type": "answer", "question": question["id"], "choice": choice})
    assert (await until(ws_a, "answered"))["choice"] == choice
    await ws_a.send_json_to({"type": "answer", "question": question["id"], "choice": choice})
    assert (await until(ws_a, "error"))["code"] == "already_answered"
    counts = await until(console, "answers")
    assert counts["total"] == 1 and counts["counts"][choice] == 1
    await console.send_json_to({"type": "reveal"})
    held = await until(ws_a, "token")  # released just before the reveal
    assert held["seq"] == 1
    reveal = await until(ws_a, "reveal")
    model_token = "<eos>" if held["id"] == 2 else held["token"]
    assert reveal["answer"] == model_token
    assert reveal["you"] == {"answered": True, "correct": choice == model_token, "score": int(choice == model_token)}
    assert "scores" not in reveal  # names stay on the console
    late = await until(ws_b, "reveal")
    assert late["you"]["answered"] is False
    await ws_b.send_json_to({"type": "answer", "question": question["id"], "choice": choice})
    assert (await until(ws_b, "error"))["code"] == "revealed"
    console_reveal = await until(console, "reveal")
    assert {row["name"] for row in console_reveal["scores"]} == {"ann", "bob"}
    from webapp.classroom.models import Answer

    assert await db(Answer.objects.count)() == 1
    for ws in (console, ws_a, ws_b):
        await ws.disconnect()


async def test_the_attention_question_is_answered_by_the_argmax_of_the_workers_row(worker, session, instructor,
                                                                                   make_student):
    from webapp.classroom.reveal import cross_row

    console, _ = await seat(session, instructor)
    ws_a, _ = await seat(session, await db(make_student)("ann"))
    await console.send_json_to({"type": "views", "views": ["cross"], "layer": 0, "head": "mean"})
    await console.send_json_to({"type": "run", "source": SOURCE, "step_mode": True, "min_len": 3, "max_len": 3})
    start = await until(ws_a, "start")
    await console.send_json_to({"type": "question", "kind": "attention"})
    question = await until(ws_a, "question")
    assert question["options"] == [f"{i}: {t}" for i, t in enumerate(start["src_tokens"])]
    await ws_a.send_json_to({"type": "answer", "question": question["id"], "choice": question["options"][2]})
    await until(ws_a, "answered")
    await console.send_json_to({"type": "reveal"})
    step = await until(ws_a, "token")
    reveal = await until(ws_a, "reveal")
    row = cross_row(step, 0, "mean")
    best = max(range(len(row)), key=row.__getitem__)
    assert reveal["answer"] == question["options"][best]
    assert reveal["you"]["correct"] == (best == 2)
    for ws in (console, ws_a):
        await ws.disconnect()


async def _until_held(code: str, timeout_s: float = 10) -> None:
    """Until this process's relay of the session holds a question's step back."""
    from webapp.classroom.relay import relays

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while (relay := relays().by_code.get(code)) is None or relay.held_from is None:
        assert loop.time() < deadline, "the question's step never reached the relay"
        await asyncio.sleep(0.02)


async def test_a_late_joiner_sees_the_tokens_so_far_and_the_open_question_but_not_the_held_step(
        worker, session, instructor, make_student):
    console, _ = await seat(session, instructor)
    await console.send_json_to({"type": "run", "source": SOURCE, "step_mode": True, "min_len": 5, "max_len": 5})
    await until(console, "start")
    for seq in range(2):
        await console.send_json_to({"type": "step"})
        await until(console, "token", seq=seq)
    await console.send_json_to({"type": "question", "kind": "stop"})
    await until(console, "question")
    await _until_held(session.code)  # the held step has reached the relay
    late, snapshot = await seat(session, await db(make_student)("late"))
    assert snapshot["question"]["kind"] == "stop" and snapshot["question"]["options"] == ["yes", "no"]
    state = await until(late, "state")
    assert [f["type"] for f in state["frames"]] == ["start", "token", "token"]
    await late.send_json_to({"type": "answer", "question": snapshot["question"]["id"], "choice": "maybe"})
    assert (await until(late, "error"))["code"] == "bad_params"
    await late.send_json_to({"type": "answer", "question": snapshot["question"]["id"], "choice": "no"})
    await until(late, "answered")
    await console.send_json_to({"type": "reveal"})
    assert (await until(late, "token"))["seq"] == 2
    reveal = await until(late, "reveal")
    assert reveal["answer"] in ("yes", "no")
    # a student who saw a gap asks again and gets every frame so far, the released step included
    await late.send_json_to({"type": "resync"})
    again = await until(late, "state")
    assert [f.get("seq") for f in again["frames"] if f["type"] == "token"] == [0, 1, 2]
    for ws in (console, late):
        await ws.disconnect()


async def test_ending_the_session_tells_everyone_and_refuses_new_sockets(worker, session, instructor, make_student):
    console, _ = await seat(session, instructor)
    student = await db(make_student)("ann")
    ws_a, _ = await seat(session, student)
    await console.send_json_to({"type": "end"})
    assert (await until(ws_a, "ended"))["reason"] == "instructor"  # the screen says who ended it
    assert (await ws_a.receive_output(timeout=5))["type"] == "websocket.close"
    from tests.fixtures.sockets import socket_for

    again = await socket_for(f"/ws/classroom/{session.code}/", student)
    assert (await again.connect())[0]
    assert (await until(again, "error"))["code"] == "not_found"


async def test_the_console_sees_who_is_present_by_name_and_students_see_no_names(worker, session, instructor,
                                                                                make_student):
    console, _ = await seat(session, instructor)
    ann = await db(make_student)("ann")
    ws_a, _ = await seat(session, ann)
    present = await until(console, "presence", count=1)
    assert present["names"] == ["ann"]
    ws_b, _ = await seat(session, await db(make_student)("bob"))
    assert (await until(console, "presence", count=2))["names"] == ["ann", "bob"]
    await ws_a.disconnect()
    assert (await until(console, "presence", count=1))["names"] == ["bob"]
    await console.send_json_to({"type": "question", "kind": "choice", "prompt": "Which?", "options": ["x", "y"]})
    await until(ws_b, "question")
    assert await ws_b.receive_nothing(timeout=0.5)  # no presence list, no names, ever reach a student
    for ws in (console, ws_b):
        await ws.disconnect()


async def test_the_history_keeps_each_run_and_each_question_with_its_counts(worker, session, instructor,
                                                                            make_student, client_as):
    console, _ = await seat(session, instructor)
    ann = await db(make_student)("ann")
    ws_a, _ = await seat(session, ann)
    await console.send_json_to({"type": "run", "source": SOURCE, "min_len": 5, "max_len": 5})
    done = await until(ws_a, "done")
    await console.send_json_to({"type": "question", "kind": "choice", "prompt": "Which?", "options": ["x", "y"]})
    question = await until(ws_a, "question")
    await ws_a.send_json_to({"type": "answer", "question": question["id"], "choice": "y"})
    await until(ws_a, "answered")
    await console.send_json_to({"type": "reveal", "answer": "y"})
    reveal = await until(ws_a, "reveal")
    assert reveal["you"] == {"answered": True, "correct": True, "score": 1}
    await console.send_json_to({"type": "end"})
    await until(ws_a, "ended")

    @db
    def kept_pages():
        from webapp.classroom.models import Transcript

        transcript = Transcript.objects.get(session=session)
        if transcript.ended_at is None:
            return None
        return transcript, client_as(ann).get(f"/classroom/{session.code}/history/").content.decode()

    transcript, page = await wait_until_async(kept_pages, "the transcript kept by the web process once `done` went out")
    assert transcript.text == done["text"] and [f["type"] for f in transcript.frames][-1] == "done"
    assert len([f for f in transcript.frames if f["type"] == "token"]) == 5
    assert done["text"] in page and "Which?" in page and "y: 1" in page and "x: 0" in page
    assert 'data-testid="revealed-answer">y<' in page


async def test_a_new_layer_or_head_reaches_every_screen_for_the_steps_so_far_and_the_next(worker, session, instructor,
                                                                                         make_student):
    console, _ = await seat(session, instructor)
    ws_a, _ = await seat(session, await db(make_student)("ann"))
    await console.send_json_to({"type": "run", "source": SOURCE, "step_mode": True, "min_len": 4, "max_len": 4})
    start = await until(ws_a, "start")
    assert start["attention_view"]["head"] == "mean"  # the console's default: the heads' mean
    for seq in range(2):
        await console.send_json_to({"type": "step"})
        await until(ws_a, "token", seq=seq)
    await console.send_json_to({"type": "views", "views": ["cross", "self"], "layer": 0, "head": 1})
    assert (await until(ws_a, "views"))["head"] == 1
    await console.send_json_to({"type": "step"})  # the worker answers the view between two steps
    attention = await until(ws_a, "attention")
    assert attention["view"]["layer"] == 0 and attention["view"]["head"] == 1 and len(attention["steps"]) >= 2
    token = await until(ws_a, "token", seq=2)
    assert (token["attention"]["layer"], token["attention"]["head"]) == (0, 1)
    for ws in (console, ws_a):
        await ws.disconnect()


async def test_a_held_last_step_stays_held_in_the_history_and_on_a_process_that_starts_after_the_run(
        worker, session, instructor, make_student, client_as):
    """The held step is the run's last (its token limit): the run ends while the question is open. The history, and a
    student whose socket reaches a process with no relay for the session (every socket here closed), still see only
    the steps before it and the question's options; the reveal then works from the kept transcript and releases the
    step to that student."""
    from asgiref.sync import sync_to_async

    from webapp.classroom.models import Transcript

    ann = await db(make_student)("ann")
    console, _ = await seat(session, instructor)
    student, _ = await seat(session, ann)
    await console.send_json_to({"type": "run", "source": SOURCE, "step_mode": True, "min_len": 6, "max_len": 6})
    start = await until(console, "start")
    for seq in range(5):
        await console.send_json_to({"type": "step"})
        await until(console, "token", seq=seq)
    await console.send_json_to({"type": "question", "kind": "next_token"})
    question = await until(student, "question")
    assert question["seq"] == 5
    options = (await until(student, "options"))["options"]
    await wait_until_async(db(Transcript.objects.filter(request_id=start["request_id"], ended_at__isnull=False).exists),
                           "the worker answered the held step, its last, and the run was kept", timeout=10)
    assert await student.receive_nothing(timeout=0.3)  # neither the step nor `done` reached the screens

    page = await sync_to_async(lambda: client_as(ann).get(f"/classroom/{session.code}/history/").content.decode())()
    assert "4: " in page and "5: " not in page and "stopped by" not in page
    assert 'data-testid="run-held"' in page

    for ws in (console, student):
        await ws.disconnect()
    student, snapshot = await seat(session, ann)  # this process has no relay of the session any more
    assert snapshot["question"]["id"] == question["id"] and snapshot["question"]["options"] == options
    state = await until(student, "state")
    assert [(f["type"], f.get("seq")) for f in state["frames"]] == [("start", None)] + [("token", i) for i in range(5)]
    await student.send_json_to({"type": "answer", "question": question["id"], "choice": options[0]})
    await until(student, "answered")
    console, _ = await seat(session, instructor)
    await console.send_json_to({"type": "reveal"})
    held = await until(student, "token")
    assert held["seq"] == 5  # released just before the reveal, then the run's end
    assert (await until(student, "done"))["reason"] == "max_len"
    reveal = await until(student, "reveal")
    assert reveal["answer"] == held["token"] and reveal["you"]["correct"] is (options[0] == held["token"])
    page = await sync_to_async(lambda: client_as(ann).get(f"/classroom/{session.code}/history/").content.decode())()
    assert "5: " in page and 'data-testid="run-held"' not in page
    for ws in (console, student):
        await ws.disconnect()


async def test_the_session_frame_comes_first_though_events_reach_the_socket_while_it_is_built(
        session, instructor, make_student, monkeypatch):
    """A socket joins the session's relay before its snapshot is read from the database; what the relay hands it
    meanwhile (a student arriving: the console's presence list) comes after the `session` frame, not before it."""
    import threading

    from webapp.classroom import room

    built, arrived = room.snapshot, threading.Event()

    def slowly(*args, **kwargs):
        if not arrived.is_set():  # the console's: a busy database, read until a student has arrived meanwhile
            assert arrived.wait(10), "no student joined the relay while the console's snapshot was read"
        return built(*args, **kwargs)

    monkeypatch.setattr(room, "snapshot", slowly)
    console = asyncio.ensure_future(seat(session, instructor))  # seat() asserts the first frame is `session`
    from webapp.classroom.relay import relays

    def joined() -> int:
        relay = relays().by_code.get(session.code)
        return len(relay.sockets) if relay else 0

    await wait_until_async(joined, "the console joined the relay", timeout=10)
    joining = asyncio.ensure_future(seat(session, await db(make_student)("ann")))
    await wait_until_async(lambda: joined() == 2, "the student joined the relay", timeout=10)
    arrived.set()
    ann, _ = await joining
    ws, first = await console
    assert first["role"] == "console"
    while "ann" not in (await until(ws, "presence"))["names"]:  # the event is not lost: it follows
        pass
    for socket in (ws, ann):
        await socket.disconnect()
