"""A question's life: asked, answered once per student, closed or revealed, scored (questions.py, on the test
database and the session's embedded Redis; no worker or web server)."""
from __future__ import annotations

import pytest

from tests.fixtures.classroom import answer_as, ask_choice, take_answer
from webapp.classroom.errors import ClassroomError
from webapp.classroom.models import Answer, LiveSession, Question
from webapp.classroom.questions import (
    QuestionSpec,
    answer_counts,
    live_counts,
    my_answer,
    open_question,
    parse_question,
    question_open,
    question_reveal,
    questions_close,
    score_of,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(instructor):
    return LiveSession.objects.create(instructor=instructor, title="Unit", model_name="tiny", code="UNIT0001")


def refusal(call) -> str:
    with pytest.raises(ClassroomError) as refused:
        call()
    return refused.value.code


def test_a_class_answers_the_console_sees_the_counts_and_the_reveal_scores_each_student(session, seated):
    ann, bob, cat = seated("ann"), seated("bob"), seated("cat")
    question = ask_choice(session, "red", "green", "blue")
    assert answer_as(session, ann, question, " green ") == "green"  # as it will be counted
    answer_as(session, bob, question, "red")
    answer_as(session, cat, question, "green")
    assert list(live_counts(question.pk).items()) == [("red", 1), ("green", 2), ("blue", 0)]

    results = question_reveal(question=question, answer="green")
    assert results == {ann.pk: (True, 1), bob.pk: (False, 0), cat.pk: (True, 1)}
    question.refresh_from_db()
    assert question.status == Question.REVEALED and question.answer == "green" and question.revealed_at is not None
    assert answer_counts(question) == {"red": 1, "green": 2, "blue": 0}  # kept in the database
    assert my_answer(question, bob) == "red"


def test_a_student_who_answers_twice_is_counted_once_with_the_first_answer(session, seated):
    ann = seated("ann")
    question = ask_choice(session, "red", "green")
    answer_as(session, ann, question, "red")
    assert refusal(lambda: answer_as(session, ann, question, "green")) == "already_answered"
    assert my_answer(question, ann) == "red"
    question_reveal(question=question, answer="green")
    assert list(Answer.objects.values_list("choice", "correct")) == [("red", False)]
    assert score_of(session, ann) == 0


def test_no_answer_is_taken_after_the_reveal(session, seated):
    ann = seated("ann")
    question = ask_choice(session, "red", "green")
    question_reveal(question=question, answer="red")
    assert refusal(lambda: answer_as(session, ann, question, "red")) == "revealed"
    assert not Answer.objects.exists()


def test_a_question_closed_without_a_reveal_keeps_its_answers_unmarked_and_takes_no_more(session, seated):
    ann, bob = seated("ann"), seated("bob")
    question = ask_choice(session, "red", "green")
    answer_as(session, ann, question, "red")
    assert questions_close(session=session) == 1
    assert refusal(lambda: answer_as(session, bob, question, "red")) == "not_open"
    assert list(Answer.objects.values_list("choice", "correct")) == [("red", None)]
    assert open_question(session) is None


def test_asking_a_new_question_closes_the_open_one_with_its_answers_kept(session, seated):
    ann = seated("ann")
    first = ask_choice(session, "red", "green")
    answer_as(session, ann, first, "green")
    second = ask_choice(session, "yes", "no")
    first.refresh_from_db()
    assert first.status == Question.CLOSED and answer_counts(first)["green"] == 1
    assert open_question(session) == second
    assert answer_as(session, ann, second, "no") == "no"  # a new question, a new answer


def test_a_typed_next_token_answer_is_right_whatever_its_case(session, seated):
    ann, bob = seated("ann"), seated("bob")
    question = question_open(session=session, spec=QuestionSpec(Question.NEXT_TOKEN, "", []), request_id="r", seq=2,
                             options=["cat", "dog"])
    answer_as(session, ann, question, "Cat")  # typed, not among the listed options: allowed for a next token
    answer_as(session, bob, question, "dog")
    assert question_reveal(question=question, answer="cat") == {ann.pk: (True, 1), bob.pk: (False, 0)}


def test_an_answer_must_be_one_of_the_options_of_a_question_of_this_session(session, seated, instructor):
    ann = seated("ann")
    question = ask_choice(session, "red", "green")
    other = LiveSession.objects.create(instructor=instructor, title="Other", model_name="tiny", code="UNIT0002")
    assert refusal(lambda: answer_as(session, ann, question, "purple")) == "bad_params"
    assert refusal(lambda: answer_as(session, ann, question, "")) == "bad_params"
    assert refusal(lambda: answer_as(other, ann, question, "red")) == "not_found"
    assert refusal(lambda: take_answer(session_id=session.pk, user_id=ann.pk, question_id=True,
                                         choice="red")) == "bad_params"
    assert answer_as(session, ann, question, "red") == "red"  # none of the refused ones used up the student's answer


def test_a_question_about_the_model_needs_a_step_and_no_question_opens_in_an_ended_session(session):
    spec = QuestionSpec(Question.NEXT_TOKEN, "", [])
    assert refusal(lambda: question_open(session=session, spec=spec, request_id=None, seq=None)) == "not_stepping"
    session.ended_at = session.created_at
    assert refusal(lambda: ask_choice(session, "a", "b")) == "ended"
    assert not Question.objects.exists()


@pytest.mark.parametrize("frame", [
    {"kind": "guess"},
    {"kind": "choice", "prompt": "Which?", "options": ["same", " same "]},
    {"kind": "choice", "prompt": "Which?", "options": ["only one"]},
    {"kind": "choice", "prompt": "", "options": ["a", "b"]},
    {"kind": "stop", "prompt": "x" * 301},
])
def test_a_question_frame_that_cannot_be_asked_is_refused(frame):
    assert refusal(lambda: parse_question(frame)) == "bad_params"


def test_a_multiple_choice_question_lists_each_option_once_trimmed():
    spec = parse_question({"kind": "choice", "prompt": " Which? ", "options": ["a ", "b", "a"]})
    assert spec == QuestionSpec(Question.CHOICE, "Which?", ["a", "b"])
