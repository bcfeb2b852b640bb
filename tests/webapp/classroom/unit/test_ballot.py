"""Counting a question's answers while it is open (ballot.py: one Redis script per answer; the test session's
embedded Redis, no worker or web server)."""
from __future__ import annotations

import itertools

import pytest
from asgiref.sync import async_to_sync

from webapp.classroom.ballot import (
    CLOSED,
    REVEALED,
    ballot_answer_async,
    ballot_close,
    ballot_counts,
    ballot_mine,
    ballot_open,
)

_ids = itertools.count(9_000_000)  # question ids no database row has
ballot_answer = async_to_sync(ballot_answer_async)  # as a socket counts it, from a synchronous test


@pytest.fixture
def question_id() -> int:
    question_id = next(_ids)
    ballot_open(question_id)
    return question_id


def test_each_answer_is_counted_under_its_choice_options_first_in_order_then_typed_ones(question_id):
    for user, choice in [(1, "b"), (2, "b"), (3, "a"), (4, "typed")]:
        assert ballot_answer(question_id, user, choice) == (True, "")
    assert list(ballot_counts(question_id, ["c", "b", "a"]).items()) == [("c", 0), ("b", 2), ("a", 1), ("typed", 1)]


def test_a_student_who_answers_twice_is_counted_once_with_the_first_answer(question_id):
    assert ballot_answer(question_id, 1, "a") == (True, "")
    assert ballot_answer(question_id, 1, "b") == (False, "already")
    assert ballot_answer(question_id, 1, "a") == (False, "already")
    assert ballot_counts(question_id, ["a", "b"]) == {"a": 1, "b": 0}
    assert ballot_mine(question_id, 1) == "a"
    assert ballot_mine(question_id, 2) is None


@pytest.mark.parametrize("status", [REVEALED, CLOSED])
def test_no_answer_is_taken_once_the_question_is_revealed_or_closed(question_id, status):
    ballot_answer(question_id, 1, "a")
    taken = ballot_close(question_id, status)
    assert ballot_answer(question_id, 2, "a") == (False, status)
    assert ballot_counts(question_id, ["a"]) == {"a": 1}
    assert list(taken) == [1] and taken[1][0] == "a" and taken[1][1] is not None  # with the time it came


def test_a_question_the_ballot_never_opened_takes_no_answer():
    assert ballot_answer(next(_ids), 1, "a") == (False, "")


def test_closing_returns_every_answer_taken_and_reopening_starts_from_none(question_id):
    ballot_answer(question_id, 1, "a")
    ballot_answer(question_id, 2, "b")
    assert {user: choice for user, (choice, _) in ballot_close(question_id, CLOSED).items()} == {1: "a", 2: "b"}
    ballot_open(question_id)
    assert ballot_counts(question_id, ["a", "b"]) == {"a": 0, "b": 0}
    assert ballot_answer(question_id, 1, "b") == (True, "")


async def test_answers_from_the_sockets_event_loop_follow_the_same_rules(question_id):
    assert await ballot_answer_async(question_id, 1, "a") == (True, "")
    assert await ballot_answer_async(question_id, 1, "b") == (False, "already")
    ballot_close(question_id, REVEALED)
    assert await ballot_answer_async(question_id, 2, "a") == (False, REVEALED)
