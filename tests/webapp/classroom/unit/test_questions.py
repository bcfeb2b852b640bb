"""A question's life: asked, answered once per student, closed or revealed, scored, and what a screen that joins is
shown of it (webapp/classroom/questions.py, and room.snapshot as a joining screen's first frame and the console's
table show it). Nothing runs but those modules, the test database and the test run's embedded Redis: no worker or web
server."""
from __future__ import annotations

import orjson
import pytest

from tests.fixtures.classroom import answer_as, ask_choice, take_answer
from tests.fixtures.session_relay import RUN, token
from webapp.classroom.errors import ClassroomError
from webapp.classroom.models import Answer, LiveSession, Question
from webapp.classroom.questions import (
    QuestionSpec,
    answer_counts,
    class_scores,
    live_counts,
    my_answer,
    open_question,
    parse_question,
    question_open,
    question_reveal,
    questions_close,
    score_of,
)
from webapp.classroom.relay import SessionRelay
from webapp.classroom.room import public_question, reveal_store, snapshot
from webapp.classroom.services import session_state_update

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(instructor):
    return LiveSession.objects.create(instructor=instructor, title="Unit", model_name="tiny", code="UNIT0001")


def refusal(call) -> str:
    with pytest.raises(ClassroomError) as refused:
        call()
    return refused.value.code


def relay_of(session: LiveSession) -> SessionRelay:
    return SessionRelay(session.code, None)


def table(session) -> dict[str, tuple[int, int]]:
    """The console's class table: name -> (score, answers given)."""
    return {row["name"]: (row["score"], row["answered"]) for row in class_scores(session)}


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
