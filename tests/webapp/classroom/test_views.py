"""The classroom's pages: who may open what, join codes, the QR code, the history and its CSV."""
from __future__ import annotations

import math

import pytest

from tests.fixtures.classroom import take_answer
from webapp.classroom.codes import ALPHABET, BITS, LENGTH, new_code, normalize_code

pytestmark = pytest.mark.django_db

LOGIN = "login"


@pytest.fixture
def session(instructor, tiny_published):
    from webapp.classroom.services import session_create

    return session_create(instructor=instructor, title="Live", model_name=tiny_published.name)


@pytest.fixture
def other_instructor(django_user_model):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(username="other-teacher", password="pw-for-tests-only")
    user.groups.add(Group.objects.get_or_create(name="instructors")[0])
    return user


def test_join_codes_are_unambiguous_and_hard_to_guess():
    assert not set("0O1lI") & set(ALPHABET)
    assert BITS >= 30 and math.isclose(BITS, LENGTH * math.log2(len(ALPHABET)))
    codes = {new_code() for _ in range(2000)}
    assert len(codes) == 2000 and all(len(c) == LENGTH and set(c) <= set(ALPHABET) for c in codes)
    assert normalize_code(" abc-d efg") == "ABCDEFG"


def expect(response, outcome, who):
    if outcome == LOGIN:
        assert response.status_code == 302, who
        assert response["Location"].startswith("/accounts/login/") and "next=" in response["Location"], who
    else:
        assert response.status_code == outcome, (who, response.status_code)


def test_each_role_gets_what_it_should_on_a_live_session(client_as, session, student, instructor, admin,
                                                         other_instructor):
    code = session.code
    matrix = {  # anonymous, student, other instructor, the session's instructor, admin
        f"/classroom/{code}/": (LOGIN, 200, 200, 200, 200),
        f"/classroom/{code}/console/": (LOGIN, 403, 403, 200, 200),
        f"/classroom/{code}/end/": (LOGIN, 403, 403, 200, 200),  # GET asks first; only a POST ends it
        f"/classroom/{code}/history/answers.csv": (LOGIN, 403, 403, 200, 200),
    }
    for path, outcomes in matrix.items():
        for user, outcome in zip((None, student, other_instructor, instructor, admin), outcomes, strict=True):
            expect(client_as(user).get(path), outcome, (path, user))
    # the history: its instructor and participants (the student and the other instructor joined above)
    outsider = client_as(None)
    expect(outsider.get(f"/classroom/{code}/history/"), LOGIN, "anonymous")
    from django.contrib.auth.models import Group, User

    newcomer = User.objects.create_user(username="newcomer", password="pw-for-tests-only")
    newcomer.groups.add(Group.objects.get_or_create(name="students")[0])
    expect(client_as(newcomer).get(f"/classroom/{code}/history/"), 403, "a student who never joined")
    expect(client_as(student).get(f"/classroom/{code}/history/"), 200, "a participant")


def test_anonymous_visitors_come_back_to_the_session_after_signing_in(client, session):
    response = client.get(f"/classroom/{session.code}/")
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next=/classroom/{session.code}/"


def test_the_console_shows_the_code_large_and_a_qr_code(client_as, session, instructor):
    page = client_as(instructor).get(f"/classroom/{session.code}/console/").content.decode()
    assert f'data-testid="join-code">{session.code}<' in page
    assert '<svg' in page and 'class="segno"' in page


def test_both_screens_open_on_the_views_the_session_shows(client_as, session, instructor, student):
    import re

    from webapp.classroom.services import session_state_update

    session_state_update(session=session, views=["self", "kv"])
    screens = {"console": client_as(instructor).get(f"/classroom/{session.code}/console/").content.decode(),
               "follow": client_as(student).get(f"/classroom/{session.code}/").content.decode()}
    for page in screens.values():  # before the socket's first frame: no card of a view the session hides
        cards = re.findall(r'<article class="card pg-view" data-view="(\w+)"( hidden)?[ >]', page)
        shown, hidden = [v for v, h in cards if not h], [v for v, h in cards if h]
        assert shown == ["self", "kv"] and sorted(hidden) == ["beams", "cross", "encoder", "topk"]
        assert 'id="cr-page" aria-busy="true"' in page
    checked = re.findall(r'value="(\w+)" data-testid="show-\w+" checked', screens["console"])
    assert checked == ["self", "kv"]


def test_an_instructor_creates_a_session_and_a_student_cannot(client_as, instructor, student, tiny_published):
    from webapp.classroom.models import LiveSession

    response = client_as(instructor).post("/classroom/new/", {"title": "Monday", "model": "tiny"})
    created = LiveSession.objects.get(title="Monday")
    assert response.status_code == 302 and response["Location"] == f"/classroom/{created.code}/console/"
    assert client_as(student).post("/classroom/new/", {"title": "Mine", "model": "tiny"}).status_code == 403
    refused = client_as(instructor).post("/classroom/new/", {"title": "Hidden", "model": "no-such-model"})
    assert refused.status_code == 400 and not LiveSession.objects.filter(title="Hidden").exists()
    assert 'data-testid="create"' in refused.content.decode()  # the form again, with why


def test_the_new_session_address_opened_directly_shows_the_form(client_as, instructor, student, tiny_published):
    page = client_as(instructor).get("/classroom/new/")
    body = page.content.decode()
    assert page.status_code == 200 and 'data-testid="new-card"' in body and 'value="tiny"' in body
    assert client_as(student).get("/classroom/new/").status_code == 403


def test_join_by_code_accepts_lower_case_and_refuses_wrong_or_ended_codes(client_as, student, session):
    client = client_as(student)
    response = client.get("/classroom/join/", {"code": session.code.lower()})
    assert response.status_code == 302 and response["Location"] == f"/classroom/{session.code}/"
    wrong = client.get("/classroom/join/", {"code": "ZZZZZZZ" if session.code != "ZZZZZZZ" else "YYYYYYY"})
    assert wrong.status_code == 400 and "No session has this code" in wrong.content.decode()
    assert client.get("/classroom/join/", {"code": "0O1"}).status_code == 400
    from webapp.classroom.services import session_end

    session_end(session=session)
    ended = client.get("/classroom/join/", {"code": session.code})
    assert ended.status_code == 400 and "This session has ended" in ended.content.decode()


def test_an_ended_session_sends_participants_to_its_history_and_refuses_newcomers(client_as, session, student,
                                                                                 django_user_model):
    from webapp.classroom.services import session_end

    client_as(student).get(f"/classroom/{session.code}/")  # takes a seat
    session_end(session=session)
    response = client_as(student).get(f"/classroom/{session.code}/")
    assert response.status_code == 302 and response["Location"] == f"/classroom/{session.code}/history/"
    late = django_user_model.objects.create_user(username="late", password="pw-for-tests-only")
    assert client_as(late).get(f"/classroom/{session.code}/").status_code == 410


def test_the_csv_holds_every_answer_and_defuses_formulas(client_as, session, student, instructor):
    from webapp.classroom.models import Question
    from webapp.classroom.questions import QuestionSpec, question_open, question_reveal
    from webapp.classroom.services import session_join

    session_join(user=student, session=session)
    question = question_open(session=session, spec=QuestionSpec("choice", "Which?", ["=1+1", "b"]),
                             request_id=None, seq=None)
    take_answer(session_id=session.pk, user_id=student.pk, question_id=question.pk, choice="=1+1")
    question_reveal(question=Question.objects.get(pk=question.pk), answer="=1+1")
    body = client_as(instructor).get(f"/classroom/{session.code}/history/answers.csv").content.decode()
    header, row = body.strip().splitlines()
    assert header.startswith("question,kind,prompt,step,student,answer,correct")
    assert "stu" in row and "'=1+1" in row and ",1," in row


def test_an_unknown_code_is_a_404_page(client_as, student):
    assert client_as(student).get("/classroom/ZZZZZZ9/").status_code == 404
