"""Counting a question's answers while it is open, as the console's histogram shows them (webapp/classroom/ballot.py:
one Redis script per answer): one answer per student however fast the class clicks, the options first, each question
counted on its own, none taken after the reveal or close. Nothing runs but ballot.py and the test run's embedded
Redis: no worker, web server or database."""
from __future__ import annotations

import asyncio
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


def test_typed_answers_follow_the_options_in_order_alphabetically_and_an_option_nobody_chose_shows_zero(question_id):
    for user, choice in [(1, "zebra"), (2, "cat"), (3, "dog"), (4, "apple"), (5, "cat")]:
        assert ballot_answer(question_id, user, choice) == (True, "")
    assert list(ballot_counts(question_id, ["dog", "cat", "emu"]).items()) == [
        ("dog", 1), ("cat", 2), ("emu", 0), ("apple", 1), ("zebra", 1)]


def test_a_student_who_answers_twice_is_counted_once_with_the_first_answer(question_id):
    assert ballot_answer(question_id, 1, "a") == (True, "")
    assert ballot_answer(question_id, 1, "b") == (False, "already")
    assert ballot_answer(question_id, 1, "a") == (False, "already")
    assert ballot_counts(question_id, ["a", "b"]) == {"a": 1, "b": 0}
    assert ballot_mine(question_id, 1) == "a"
    assert ballot_mine(question_id, 2) is None


async def test_a_class_that_clicks_twice_at_once_is_counted_once_each_as_each_student_sees_it(question_id):
    """On the socket's own event loop, as the sockets count answers."""
    students = range(1, 41)
    verdicts = await asyncio.gather(*(ballot_answer_async(question_id, user, choice)
                                      for user in students for choice in ("a", "b")))
    assert sorted(verdicts) == [(False, "already")] * 40 + [(True, "")] * 40
    counts = ballot_counts(question_id, ["a", "b"])
    assert sum(counts.values()) == 40
    mine = [ballot_mine(question_id, user) for user in students]
    assert counts == {"a": mine.count("a"), "b": mine.count("b")}  # the bars agree with every student's own answer
    ballot_close(question_id, REVEALED)
    assert await ballot_answer_async(question_id, 41, "a") == (False, REVEALED)  # the reveal's refusal too


@pytest.mark.parametrize("status", [REVEALED, CLOSED])
def test_no_answer_is_taken_once_the_question_is_revealed_or_closed(question_id, status):
    ballot_answer(question_id, 1, "a")
    taken = ballot_close(question_id, status)
    assert ballot_answer(question_id, 2, "a") == (False, status)
    assert ballot_counts(question_id, ["a"]) == {"a": 1}
    assert list(taken) == [1] and taken[1][0] == "a" and taken[1][1] is not None  # with the time it came


def test_a_question_the_ballot_never_opened_takes_no_answer():
    assert ballot_answer(next(_ids), 1, "a") == (False, "")


def test_an_answer_counts_only_for_its_own_question(question_id):
    other = next(_ids)
    ballot_open(other)
    ballot_answer(question_id, 1, "a")
    assert ballot_counts(other, ["a"]) == {"a": 0}
    assert ballot_answer(other, 1, "b") == (True, "")  # the same student answers the other question too
    assert ballot_counts(question_id, ["a", "b"]) == {"a": 1, "b": 0}
    ballot_close(other, CLOSED)
    assert ballot_answer(question_id, 2, "a") == (True, "")  # closing one leaves the other open


def test_closing_hands_over_every_answer_once_the_counts_stay_on_the_console_and_reopening_starts_from_none(
    question_id,
):
    for user, choice in [(1, "a"), (2, "b"), (3, "a")]:
        ballot_answer(question_id, user, choice)
    taken = ballot_close(question_id, CLOSED)
    assert {user: choice for user, (choice, _) in taken.items()} == {1: "a", 2: "b", 3: "a"}
    assert ballot_counts(question_id, ["a", "b"]) == {"a": 2, "b": 1}  # the histogram stays after the close
    assert ballot_close(question_id, CLOSED) == taken  # a second close hands over the same answers, nothing new
    ballot_open(question_id)
    assert ballot_counts(question_id, ["a", "b"]) == {"a": 0, "b": 0}
    assert ballot_answer(question_id, 1, "b") == (True, "")
