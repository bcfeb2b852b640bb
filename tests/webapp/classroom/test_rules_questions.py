"""A question's life as the screens show it: asked, answered, closed or revealed, scored (questions.py and what
room.snapshot hands a screen that joins; the test database and the test run's embedded Redis, no worker,
no daphne)."""
from __future__ import annotations

import orjson
import pytest

from tests.fixtures.classroom import answer_as, ask_choice
from tests.fixtures.session_relay import RUN, token
from webapp.classroom.models import LiveSession, Question
from webapp.classroom.questions import (
    QuestionSpec,
    answer_counts,
    class_scores,
    live_counts,
    question_open,
    question_reveal,
    questions_close,
)
from webapp.classroom.relay import SessionRelay
from webapp.classroom.room import public_question, reveal_store, snapshot
from webapp.classroom.services import session_state_update

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(instructor):
    return LiveSession.objects.create(instructor=instructor, title="Rules", model_name="tiny", code="RULES001")


def relay_of(session: LiveSession) -> SessionRelay:
    return SessionRelay(session.code, None)


def table(session) -> dict[str, tuple[int, int]]:
    """The console's class table: name -> (score, answers given)."""
    return {row["name"]: (row["score"], row["answered"]) for row in class_scores(session)}


def test_a_student_who_joins_while_a_question_is_open_sees_it_without_its_answer_and_their_own_choice(
    session, seated, instructor
):
    ann, bob = seated("ann"), seated("bob")
    question = ask_choice(session, "red", "green")
    answer_as(session, ann, question, "red")

    shown = snapshot(session, ann, False, relay_of(session))
    assert shown["role"] == "student" and shown["question"] == public_question(question)
    assert shown["question"]["options"] == ["red", "green"] and "answer" not in shown["question"]
    assert shown["my_answer"] == "red" and shown["score"] == 0
    assert "counts" not in shown and "scores" not in shown  # the histogram and the names are the console's only
    assert snapshot(session, bob, False, relay_of(session))["my_answer"] is None

    console = snapshot(session, instructor, True, relay_of(session))
    assert console["role"] == "console"
    assert console["counts"] == {"question": question.pk, "counts": {"red": 1, "green": 0}, "total": 1}
    assert set(table(session)) == {"ann", "bob"}


def test_after_the_reveal_a_screen_that_joins_sees_no_open_question_and_the_scores_count_it(session, seated):
    ann, bob = seated("ann"), seated("bob")
    question = ask_choice(session, "red", "green")
    answer_as(session, ann, question, "green")
    answer_as(session, bob, question, "red")
    question_reveal(question=question, answer="green")

    shown = snapshot(session, ann, False, relay_of(session))
    assert shown["question"] is None and shown["score"] == 1
    assert snapshot(session, bob, False, relay_of(session))["score"] == 0
    assert table(session) == {"ann": (1, 1), "bob": (0, 1)}


def test_scores_add_up_over_the_sessions_questions_and_a_closed_one_scores_nobody(session, seated):
    ann, bob, cat = seated("ann"), seated("bob"), seated("cat")
    first = ask_choice(session, "a", "b")
    answer_as(session, ann, first, "a")
    answer_as(session, bob, first, "a")
    question_reveal(question=first, answer="a")
    second = ask_choice(session, "x", "y")
    answer_as(session, ann, second, "y")
    answer_as(session, bob, second, "x")
    question_reveal(question=second, answer="y")
    third = ask_choice(session, "p", "q")
    answer_as(session, ann, third, "p")
    answer_as(session, cat, third, "p")
    assert questions_close(session=session) == 1

    assert table(session) == {"ann": (2, 3), "bob": (1, 2), "cat": (0, 1)}


def test_the_counts_the_console_showed_live_are_the_ones_kept_when_the_question_closes(session, seated):
    students = [seated(name) for name in ("ann", "bob", "cat", "dan")]
    question = question_open(session=session, spec=QuestionSpec(Question.NEXT_TOKEN, "", []), request_id=RUN, seq=1,
                             options=["cat", "dog"])
    for student, typed in zip(students, ["dog", "cat", "emu", "dog"], strict=True):
        answer_as(session, student, question, typed)
    live = live_counts(question.pk)
    assert list(live.items()) == [("cat", 1), ("dog", 2), ("emu", 1)]  # a typed token after the listed ones
    questions_close(session=session)
    assert answer_counts(question) == live


def test_a_next_token_question_at_a_held_step_offers_the_models_top_k_to_a_student_who_joins(session, seated):
    ann = seated("ann")
    question = question_open(session=session, spec=QuestionSpec(Question.NEXT_TOKEN, "", []), request_id=RUN, seq=1)
    relay = relay_of(session)
    relay.request_id = RUN
    steps = [token(0), token(1, name="cat")]
    relay._keep(steps, [orjson.dumps(frame).decode() for frame in steps])
    assert snapshot(session, ann, False, relay)["question"]["options"] == []  # no step held here: none to offer
    relay.held_seq = 1
    assert snapshot(session, ann, False, relay)["question"]["options"] == ["cat", "zz"]  # no probabilities

    answer_as(session, ann, question, "Cat")
    results = reveal_store(question, "cat", ["cat", "zz"])  # the reveal keeps the options the class saw
    question.refresh_from_db()
    assert question.options == ["cat", "zz"] and question.answer == "cat"
    assert results == {ann.pk: (True, 1)}


def test_an_attention_question_shows_students_the_layer_and_head_the_console_was_showing(session):
    session_state_update(session=session, layer=1, head="2")
    question = question_open(session=session, spec=QuestionSpec(Question.ATTENTION, "Where?", []),
                             request_id=RUN, seq=3)
    shown = public_question(question)
    assert (shown["kind"], shown["seq"], shown["layer"], shown["head"]) == (Question.ATTENTION, 3, 1, "2")
    session_state_update(session=session, layer=0, head="mean")  # the console moves on; the question does not
    question.refresh_from_db()
    assert (question.layer, question.head) == (1, "2")
