"""A lesson page's exercise asked as a multiple-choice question (the console's `exercise`): kept with the lesson's
English words as its keys, each screen shown them in its own language (wording.py); the reveal gives the lesson's
answer and why."""
from __future__ import annotations

from typing import Any

from webapp.classroom import questions, wording
from webapp.classroom.errors import ClassroomError
from webapp.classroom.models import LiveSession, Question
from webapp.lesson.content import exercise_right

FIELDS = ("exercise", "lang")  # `lang`: what consoles sent before each screen had its own (accepted, unused)


def exercise_checked(fields: dict[str, Any]) -> dict[str, Any]:
    """An `exercise` step's fields -> the exercise in the keys' language; ClassroomError naming what is wrong."""
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise ClassroomError("bad_params", f"unknown field {unknown[0][:40]!r}")
    found = wording.asked_words(exercise=fields["exercise"]) if isinstance(fields.get("exercise"), str) else None
    if found is None:
        raise ClassroomError("bad_params", f"no lesson exercise has the id {fields.get('exercise')!r:.50}")
    return found


def exercise_ask(*, session: LiveSession, frame: dict[str, Any]) -> Question:
    """A console's `exercise` frame: the exercise opens as a multiple-choice question; the right option is the
    exercise's own."""
    exercise = exercise_checked({k: v for k, v in frame.items() if k != "type"})
    spec = questions.QuestionSpec(kind=Question.CHOICE, prompt=exercise["prompt"][:300], options=exercise["options"])
    question = questions.question_open(session=session, spec=spec, request_id=None, seq=None)
    question.exercise = exercise["id"]
    question.save(update_fields=["exercise"])
    return question


def exercise_answer(question: Question) -> tuple[str, str] | None:
    """For a question that asks an exercise: its right option (the lesson's, whatever option the console names) and
    the exercise's explanation, in the language it was stored in; None for any other question."""
    if not question.exercise:
        return None
    return exercise_right(question.exercise, list(question.options))
