"""The counts the console's histogram shows while a question is open (webapp/classroom/ballot.py, on the test run's
embedded Redis; no worker, no daphne, no database): one answer per student however fast the class clicks, the
options first, each question counted on its own."""
from __future__ import annotations

import asyncio
import itertools

import pytest
from asgiref.sync import async_to_sync

from webapp.classroom import ballot

ballot_answer = async_to_sync(ballot.ballot_answer_async)  # as a socket counts it, from a synchronous test

_ids = itertools.count(8_000_000)  # question ids no database row has


@pytest.fixture
def opened() -> int:
    question_id = next(_ids)
    ballot.ballot_open(question_id)
    return question_id


async def test_a_class_that_clicks_twice_at_once_is_counted_once_each_as_each_student_sees_it(opened):
    students = range(1, 41)
    verdicts = await asyncio.gather(*(ballot.ballot_answer_async(opened, user, choice)
                                      for user in students for choice in ("a", "b")))
    assert sorted(verdicts) == [(False, "already")] * 40 + [(True, "")] * 40
    counts = ballot.ballot_counts(opened, ["a", "b"])
    assert sum(counts.values()) == 40
    mine = [ballot.ballot_mine(opened, user) for user in students]
    assert counts == {"a": mine.count("a"), "b": mine.count("b")}  # the bars agree with every student's own answer


def test_typed_answers_follow_the_options_alphabetically_and_an_option_nobody_chose_shows_zero(opened):
    for user, choice in [(1, "zebra"), (2, "cat"), (3, "dog"), (4, "apple"), (5, "cat")]:
        ballot_answer(opened, user, choice)
    assert list(ballot.ballot_counts(opened, ["dog", "cat", "emu"]).items()) == [
        ("dog", 1), ("cat", 2), ("emu", 0), ("apple", 1), ("zebra", 1)]


def test_an_answer_counts_only_for_its_own_question(opened):
    other = next(_ids)
    ballot.ballot_open(other)
    ballot_answer(opened, 1, "a")
    assert ballot.ballot_counts(other, ["a"]) == {"a": 0}
    assert ballot_answer(other, 1, "b") == (True, "")  # the same student answers the other question too
    assert ballot.ballot_counts(opened, ["a", "b"]) == {"a": 1, "b": 0}
    ballot.ballot_close(other, ballot.CLOSED)
    assert ballot_answer(opened, 2, "a") == (True, "")  # closing one leaves the other open


def test_the_counts_stay_on_the_console_after_the_close_and_the_answers_handed_over_match_them(opened):
    for user, choice in [(1, "a"), (2, "b"), (3, "a")]:
        ballot_answer(opened, user, choice)
    taken = ballot.ballot_close(opened, ballot.CLOSED)
    assert ballot.ballot_counts(opened, ["a", "b"]) == {"a": 2, "b": 1}
    assert sorted(choice for choice, _ in taken.values()) == ["a", "a", "b"]
    assert ballot.ballot_close(opened, ballot.CLOSED) == taken  # a second close hands over the same answers, nothing new
