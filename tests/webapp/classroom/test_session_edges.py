"""A session's edges (issue 27): ending it asks first and keeps a decode still running; the history shows each run's
tokens one by one, a stop question's answers in the reader's language, and each participant's own answers and score.
On the test database and the embedded Redis; no worker (a worker's kept copy is written as its loop writes it)."""
from __future__ import annotations

import json
import re

import pytest

from tests.fixtures.classroom import take_answer
from webapp.classroom.models import LiveSession, Question, Transcript

pytestmark = pytest.mark.django_db

TOKENS = ["we", "see", "my"]


@pytest.fixture
def session(instructor):
    return LiveSession.objects.create(instructor=instructor, title="Edges", model_name="tiny", code="EDGE2345")


def stepping(session, request_id: str = "edge-run") -> str:
    """A step-by-step run three steps in, waiting for the next Step, and the copy its worker keeps once it ends."""
    from webapp.classroom.services import session_state_update
    from webapp.classroom.session_run import transcript_open
    from webapp.ops.redis_client import app_redis
    from webapp.playground import keys

    transcript_open(session=session, request_id=request_id, source="我们看见我的猫。", params={"strategy": "greedy"})
    session_state_update(session=session, source="我们看见我的猫。", request_id=request_id, running=True, tokens=[],
                         driver=session.instructor_id, params={"strategy": "greedy", "step_mode": True})
    frames = [{"type": "start", "request_id": request_id, "step_mode": True},
              *({"type": "token", "request_id": request_id, "seq": i, "token": t, "text": " ".join(TOKENS[:i + 1])}
                for i, t in enumerate(TOKENS)),
              {"type": "done", "request_id": request_id, "text": "we see my", "steps": 3, "reason": "cancelled"}]
    app_redis().set(keys.state_key(request_id), json.dumps({"type": "state", "request_id": request_id,
                                                            "frames": frames}), ex=60)
    return request_id


def run_tokens(html: str) -> list[str]:
    """The history's output tokens of its runs, one item each."""
    lists = re.findall(r'<ol[^>]*data-testid="run-tokens"[^>]*>(.*?)</ol>', html, re.S)
    return [[re.sub(r"\s+", " ", item).strip() for item in re.findall(r"<li[^>]*>(.*?)</li>", body, re.S)]
            for body in lists]


def test_end_asks_first_and_the_console_offers_the_question_without_scripts(client_as, session, instructor, student):
    teacher = client_as(instructor)
    console = teacher.get(f"/classroom/{session.code}/console/").content.decode()
    ask = re.search(r'<form method="get" action="/classroom/EDGE2345/end/" id="cr-end-ask">', console)
    assert ask, "the End button opens the question, it does not end the session"
    assert re.search(r'<dialog id="cr-end-dialog".*?<form method="post" action="/classroom/EDGE2345/end/">'
                     r'<input type="hidden" name="csrfmiddlewaretoken"', console, re.S)

    page = teacher.get(f"/classroom/{session.code}/end/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "End “Edges”?" in html and 'data-testid="end-confirm"' in html and "csrfmiddlewaretoken" in html
    session.refresh_from_db()
    assert session.live, "asking ends nothing"
    assert client_as(student).get(f"/classroom/{session.code}/end/").status_code == 403


def test_ending_needs_the_csrf_token(instructor, session):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(instructor, backend="django.contrib.auth.backends.ModelBackend")
    assert client.post(f"/classroom/{session.code}/end/").status_code == 403
    session.refresh_from_db()
    assert session.live


def test_ending_cancels_a_step_by_step_run_and_its_history_keeps_every_token(client_as, session, instructor):
    from webapp.ops.redis_client import app_redis
    from webapp.playground import keys

    request_id = stepping(session)
    ended = client_as(instructor).post(f"/classroom/{session.code}/end/", follow=True)
    assert ended.redirect_chain[-1][0] == f"/classroom/{session.code}/history/"
    assert app_redis().get(keys.cancel_key(request_id)) is not None, "the worker is told to stop the decode"
    transcript = Transcript.objects.get(request_id=request_id)
    assert transcript.ended_at is not None and transcript.text == "we see my" and transcript.reason == "session_ended"
    html = ended.content.decode()
    assert run_tokens(html) == [["0: we", "1: see", "2: my"]]  # each its own item, never "0: we1: see"
    assert "stopped by the end of the session" in html
    assert "You ended the session." in html
    session.refresh_from_db()
    assert not session.live and not session.state.get("running")


def test_a_run_nobody_kept_shows_from_its_workers_copy_and_the_page_writes_nothing(client_as, session, instructor):
    """Every screen's socket closed before the run ended and none kept it: the history page shows it from its
    worker's copy without writing; the session's run owner keeps it (at the console's next run, or the end)."""
    from webapp.classroom.services import session_end
    from webapp.classroom.session_run import runs_keep_unkept

    request_id = stepping(session, "unkept-run")  # (each run's claim to be kept lasts an hour in Redis)
    session_end(session=session)
    html = client_as(instructor).get(f"/classroom/{session.code}/history/").content.decode()
    assert run_tokens(html) == [["0: we", "1: see", "2: my"]] and "stopped by the end of the session" not in html
    assert Transcript.objects.get(request_id=request_id).ended_at is None  # a GET keeps nothing
    runs_keep_unkept(session)
    transcript = Transcript.objects.get(request_id=request_id)
    assert transcript.frames[-1]["type"] == "done" and transcript.reason == "session_ended"


def test_a_beam_search_runs_tokens_are_its_best_beams(client_as, session, instructor):
    from webapp.classroom.session_run import run_finished, transcript_open

    transcript_open(session=session, request_id="beam-run", source="a b", params={"strategy": "beam"})
    run_finished(request_id="beam-run", frames=[
        {"type": "beams", "request_id": "beam-run", "seq": 0, "beams": [{"token": "b"}, {"token": "a"}]},
        {"type": "beams", "request_id": "beam-run", "seq": 1, "beams": [{"token": "a"}]},
        {"type": "done", "request_id": "beam-run", "text": "b a", "reason": "eos"}])
    html = client_as(instructor).get(f"/classroom/{session.code}/history/").content.decode()
    assert run_tokens(html) == [["0: b", "1: a"]]


@pytest.mark.parametrize(("language", "no", "yes", "right"), [("en", "no", "yes", "right"),
                                                               ("zh-hans", "不会", "会", "答对")])
def test_a_student_reads_their_own_answers_and_score_in_the_history(client_as, session, instructor, make_student,
                                                                     language, no, yes, right):
    from webapp.classroom.questions import QuestionSpec, question_open, question_reveal
    from webapp.classroom.services import session_end, session_join

    ann, bob, cat = make_student("ann"), make_student("bob"), make_student("cat")
    for user in (ann, bob, cat):
        session_join(user=user, session=session)
    stop = question_open(session=session, spec=QuestionSpec(Question.STOP, "", []), request_id="r", seq=3)
    take_answer(session_id=session.pk, user_id=ann.pk, question_id=stop.pk, choice="no")
    take_answer(session_id=session.pk, user_id=bob.pk, question_id=stop.pk, choice="yes")
    question_reveal(question=stop, answer="no")
    choice = question_open(session=session, spec=QuestionSpec(Question.CHOICE, "How many layers?", ["2", "6"]),
                           request_id=None, seq=None)
    take_answer(session_id=session.pk, user_id=ann.pk, question_id=choice.pk, choice="6")
    question_reveal(question=choice, answer="6")
    session_end(session=session)

    def page(user) -> str:
        client = client_as(user)
        client.cookies["django_language"] = language
        return client.get(f"/classroom/{session.code}/history/").content.decode()

    def mine(html: str) -> list[str]:
        return [re.sub(r"<[^>]+>|\s+", " ", p).split() for p in re.findall(r'data-testid="my-answer">(.*?)</p>', html, re.S)]

    def score(html: str) -> str:
        found = re.search(r'data-testid="my-score">(.*?)</p>', html, re.S)
        return re.sub(r"\s+", " ", found.group(1)).strip() if found else ""

    ann_page, bob_page, cat_page = page(ann), page(bob), page(cat)
    assert re.findall(r'data-testid="revealed-answer">([^<]+)<', ann_page) == [no, "6"]  # the buttons' words
    assert f"{no}: 1" in ann_page and f"{yes}: 1" in ann_page and ">no: 1" not in ann_page.replace(f">{no}: 1", "")
    if language == "en":
        assert score(ann_page) == "Your score: 2 right answers."
        assert score(bob_page) == "Your score: 0 right answers."
        assert mine(ann_page) == [["Your", "answer:", "no", "right"], ["Your", "answer:", "6", "right"]]
        assert mine(bob_page)[0] == ["Your", "answer:", "yes", "wrong"]
        assert mine(cat_page) == [["You", "did", "not", "answer."]] * 2
    else:
        assert score(ann_page) == "你的得分：答对 2 题。"
        assert mine(ann_page)[0] == ["你的答案：", no, right]
        assert mine(bob_page)[0] == ["你的答案：", yes, "答错了"]
        assert mine(cat_page) == [["你没有作答。"]] * 2
    teacher_page = page(instructor)
    assert 'data-testid="my-score"' not in teacher_page and 'data-testid="my-answer"' not in teacher_page


def test_a_participant_who_opens_an_ended_session_is_told_the_instructor_ended_it(client_as, session, student):
    from webapp.classroom.services import session_end, session_join

    session_join(user=student, session=session)
    session_end(session=session)
    page = client_as(student).get(f"/classroom/{session.code}/", follow=True).content.decode()
    assert "The instructor ended this session" in page


def test_the_screens_are_told_who_ended_the_session(client_as, session, instructor):
    """The `ended` frame names why (classroom.js then says so): the instructor, or hours without activity."""
    from datetime import timedelta
    from unittest import mock

    from webapp.classroom import services

    sent = []
    with mock.patch("webapp.realtime.feed.publish", side_effect=sent.extend):
        client_as(instructor).post(f"/classroom/{session.code}/end/")
        idle = LiveSession.objects.create(instructor=instructor, title="Idle", model_name="tiny", code="IDLE2345",
                                          last_active_at=services.idle_since() - timedelta(minutes=1))
        assert services.session_end_if_idle(idle)
    assert [message["frame"] for _, message in sent] == [{"type": "ended", "reason": "instructor"},
                                                         {"type": "ended", "reason": "idle"}]


def test_the_history_says_what_stopped_each_run_the_end_of_the_session_never_the_cancel_button(
        client_as, session, instructor):
    from webapp.classroom.services import session_end
    from webapp.classroom.session_run import run_finished, transcript_open

    def ran(request_id: str, last: dict) -> None:
        transcript_open(session=session, request_id=request_id, source="猫", params={"strategy": "greedy"})
        run_finished(request_id=request_id, frames=[{"type": "token", "seq": 0, "token": "cat"}, last])

    ran("by-cancel", {"type": "done", "text": "cat", "reason": "cancelled"})  # the console's Cancel, while live
    ran("by-worker", {"type": "error", "code": "worker_lost", "message": "the worker stopped answering"})
    ran("by-eos", {"type": "done", "text": "cat", "reason": "eos"})
    transcript_open(session=session, request_id="by-end", source="猫", params={"strategy": "greedy"})
    session_end(session=session)  # ended first; its decode, cancelled, is kept after (the socket's End does so)
    run_finished(request_id="by-end", frames=[{"type": "done", "text": "", "reason": "cancelled"}])

    reasons = dict(Transcript.objects.values_list("request_id", "reason"))
    assert reasons == {"by-cancel": "cancelled", "by-worker": "worker_lost", "by-eos": "eos", "by-end": "session_ended"}
    html = re.sub(r"\s+", " ", client_as(instructor).get(f"/classroom/{session.code}/history/").content.decode())
    for why in ("stopped by the Cancel button", "stopped by the loss of its worker", "stopped by the end token",
                "stopped by the end of the session"):
        assert html.count(why) == 1, why
    assert "<code>worker_lost</code>" not in html  # a known reason is said in words, not as a code
