"""Sessions end (idle, a cap per instructor), wrong join codes are throttled, and the answers CSV is safe and timed."""
from __future__ import annotations

import csv
import io
import time
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone

from tests.fixtures.classroom import take_answer

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(instructor, tiny_published):
    from webapp.classroom.services import session_create

    return session_create(instructor=instructor, title="Live", model_name=tiny_published.name)


def _idle(session, hours: float) -> None:
    from webapp.classroom.models import LiveSession

    LiveSession.objects.filter(pk=session.pk).update(last_active_at=timezone.now() - timedelta(hours=hours))


def test_a_session_without_activity_ends_and_tells_its_students_why(client_as, session, student, settings):
    settings.CLASSROOM_IDLE_HOURS = 3
    client = client_as(student)
    assert client.get(f"/classroom/{session.code}/").status_code == 200  # takes a seat
    _idle(session, 2.9)
    assert client.get(f"/classroom/{session.code}/").status_code == 200  # still live under the period
    _idle(session, 3.1)
    response = client.get(f"/classroom/{session.code}/", follow=True)
    body = response.content.decode()
    assert response.redirect_chain[-1][0] == f"/classroom/{session.code}/history/"
    assert "ended by itself after 3 hours without activity" in body
    assert 'data-testid="ended-idle"' in body
    joined = client.get("/classroom/join/", {"code": session.code})
    assert joined.status_code == 400 and "This session has ended" in joined.content.decode()


def test_an_instructor_has_at_most_the_cap_of_live_sessions_and_an_idle_one_frees_its_slot(
        client_as, instructor, tiny_published, settings):
    from webapp.classroom.models import LiveSession

    settings.CLASSROOM_LIVE_SESSIONS_PER_INSTRUCTOR = 3
    client = client_as(instructor)
    for n in range(3):
        assert client.post("/classroom/new/", {"title": f"class {n}", "model": "tiny"}).status_code == 302
    refused = client.post("/classroom/new/", {"title": "one more", "model": "tiny"})
    body = refused.content.decode()
    assert refused.status_code == 400 and "You have 3 live sessions" in body and "End one" in body
    assert LiveSession.objects.filter(instructor=instructor).count() == 3
    _idle(LiveSession.objects.get(title="class 0"), settings.CLASSROOM_IDLE_HOURS + 1)
    assert client.post("/classroom/new/", {"title": "one more", "model": "tiny"}).status_code == 302
    assert LiveSession.objects.get(title="class 0").end_reason == "idle"
    assert LiveSession.objects.filter(instructor=instructor, ended_at__isnull=True).count() == 3


def test_an_instructor_sees_the_cap_in_chinese(client_as, instructor, tiny_published, settings):  # noqa: F811
    settings.CLASSROOM_LIVE_SESSIONS_PER_INSTRUCTOR = 1
    client = client_as(instructor)
    client.post("/classroom/new/", {"title": "a", "model": "tiny"})
    refused = client.post("/classroom/new/", {"title": "b", "model": "tiny"}, HTTP_ACCEPT_LANGUAGE="zh-Hans")
    assert refused.status_code == 400 and "个进行中的课堂" in refused.content.decode()


def _wrong(code: str) -> str:
    return "ZZZZZZZ" if code != "ZZZZZZZ" else "YYYYYYY"


def test_wrong_join_codes_are_throttled_per_user_and_per_address(client_as, session, student, django_user_model,
                                                                 settings):
    settings.CLASSROOM_JOIN_FAILURES_PER_USER = 5
    settings.CLASSROOM_JOIN_FAILURES_PER_ADDRESS = 8
    client = client_as(student)
    assert client.get("/classroom/join/", {"code": session.code}).status_code == 302  # a right code costs nothing
    for _ in range(5):
        assert client.get("/classroom/join/", {"code": _wrong(session.code)}).status_code == 400
    refused = client.get("/classroom/join/", {"code": session.code})  # even the right one, until the minute ends
    assert refused.status_code == 429 and "Too many wrong join codes" in refused.content.decode()
    assert client.get(f"/classroom/{session.code}/").status_code == 429  # the session's own address too
    other = client_as(django_user_model.objects.create_user(username="other", password="pw-for-tests-only"))
    for _ in range(3):  # the same address: 8 wrong codes in all
        assert other.get(f"/classroom/{_wrong(session.code)}/").status_code == 404
    assert other.get(f"/classroom/{_wrong(session.code)}/").status_code == 429  # the address's wrong codes: refused
    assert other.get(f"/classroom/{session.code}/").status_code == 200  # their right code goes through
    elsewhere = client_as(django_user_model.objects.create_user(username="far", password="pw-for-tests-only"))
    assert elsewhere.get(f"/classroom/{session.code}/", REMOTE_ADDR="198.51.100.7").status_code == 200


def test_the_answers_csv_defuses_every_cell_and_times_each_answer(client_as, session, instructor,
                                                                  django_user_model, monkeypatch):
    from django.contrib.auth.models import Group

    from webapp.classroom import ballot
    from webapp.classroom.models import Question
    from webapp.classroom.questions import QuestionSpec, question_open, question_reveal
    from webapp.classroom.services import session_join

    students = []
    for name in ("-2+3", "@sum"):
        user = django_user_model.objects.create_user(username=name, password="pw-for-tests-only")
        user.groups.add(Group.objects.get_or_create(name="students")[0])
        session_join(user=user, session=session)
        students.append(user)
    question = question_open(session=session, spec=QuestionSpec("choice", "+cmd|' /C calc'!A0", ["-1", "+b"]),
                             request_id=None, seq=None)
    # The ballot's clock read 3 s and 1.5 s ago: two answers 1.5 s apart, both before the close.
    first = timezone.now() - timedelta(seconds=3)
    for user, choice, ago_s in ((students[0], "-1", 3.0), (students[1], "+b", 1.5)):
        monkeypatch.setattr(ballot, "time", SimpleNamespace(time=lambda ago_s=ago_s: time.time() - ago_s))
        take_answer(session_id=session.pk, user_id=user.pk, question_id=question.pk, choice=choice)
    monkeypatch.undo()
    closed = timezone.now()
    question_reveal(question=Question.objects.get(pk=question.pk), answer="-1")
    body = client_as(instructor).get(f"/classroom/{session.code}/history/answers.csv").content.decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert [r["student"] for r in rows] == ["'-2+3", "'@sum"]
    assert {r["prompt"] for r in rows} == {"'+cmd|' /C calc'!A0"}
    assert [r["answer"] for r in rows] == ["'-1", "'+b"] and {r["model_answer"] for r in rows} == {"'-1"}
    assert not [cell for row in rows for cell in row.values() if cell[:1] in ("=", "+", "-", "@", "\t", "\r")]
    times = [timezone.datetime.fromisoformat(r["answered_at"]) for r in rows]
    assert abs((times[0] - first).total_seconds()) < 1
    assert 1 <= (times[1] - times[0]).total_seconds() < 2 and times[1] < closed  # each its own time, not the close


def test_a_class_behind_one_address_past_its_limit_still_reaches_its_own_session(client_as, session, instructor,
                                                                               student, django_user_model, settings):
    """Attempts are counted while they are looked up: a class's requests at once from one shared address went past
    the address's limit. Those of the session's own students and instructor are not guesses, and are not counted."""
    from webapp.classroom.models import Participant

    settings.CLASSROOM_JOIN_FAILURES_PER_ADDRESS = 2
    Participant.objects.create(session=session, user=student)
    stranger = client_as(django_user_model.objects.create_user(username="stranger", password="pw-for-tests-only"))
    for _ in range(2):  # the shared address spends its wrong guesses
        assert stranger.get(f"/classroom/{_wrong(session.code)}/").status_code == 404
    assert stranger.get(f"/classroom/{_wrong(session.code)}/").status_code == 429  # its next guess is refused
    latecomer = client_as(django_user_model.objects.create_user(username="late", password="pw-for-tests-only"))
    assert latecomer.get(f"/classroom/{session.code}/").status_code == 200  # a right code still joins
    for _ in range(5):
        assert client_as(student).get(f"/classroom/{session.code}/").status_code == 200
        assert client_as(student).get(f"/classroom/{session.code}/demo/").status_code == 200
        assert client_as(instructor).get(f"/classroom/{session.code}/console/").status_code == 200


@pytest.mark.django_db(transaction=True)
async def test_wrong_codes_on_the_classroom_socket_are_throttled_as_the_join_page_is(session, student, settings):
    from tests.fixtures.classroom import until
    from tests.fixtures.sockets import socket_for

    settings.CLASSROOM_JOIN_FAILURES_PER_USER = 3
    for _ in range(3):
        wrong = await socket_for(f"/ws/classroom/{_wrong(session.code)}/", student)
        assert (await wrong.connect())[0]
        assert (await until(wrong, "error"))["code"] == "not_found"
        await wrong.disconnect()
    right = await socket_for(f"/ws/classroom/{session.code}/", student)
    assert (await right.connect())[0]
    assert (await until(right, "error"))["code"] == "too_many"
    closed = await right.receive_output(timeout=5)
    assert closed["type"] == "websocket.close" and closed["code"] == 4429


def test_the_sweep_command_ends_every_idle_session_and_leaves_the_active_ones(session, instructor, tiny_published,
                                                                              settings):
    from django.core.management import call_command

    from webapp.classroom.models import LiveSession
    from webapp.classroom.services import session_create

    busy = session_create(instructor=instructor, title="Busy", model_name=tiny_published.name)
    _idle(session, settings.CLASSROOM_IDLE_HOURS + 1)
    out = io.StringIO()
    call_command("classroom_end_idle", stdout=out)
    assert out.getvalue().startswith("1 live session(s)")
    assert LiveSession.objects.get(pk=session.pk).end_reason == "idle"
    assert LiveSession.objects.get(pk=busy.pk).ended_at is None
