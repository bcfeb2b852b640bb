"""A session's history: its runs' transcripts (as the worker streamed them), its questions and answers, the CSV."""
from __future__ import annotations

import csv
import io
from typing import Any

from django.utils.translation import get_language, gettext_lazy

from webapp.classroom import services
from webapp.classroom.models import Answer, LiveSession, Participant, Question
from webapp.classroom.questions import answer_counts, open_question
from webapp.classroom.relay import STEP_TYPES
from webapp.classroom.session_run import ENDED_BY_SESSION, workers_copies
from webapp.classroom.steps.comparisons import experiment_public
from webapp.classroom.wording import words

# Why a run stopped, as its history says it: its `done` frame's reason, the error code it ended with, or the end.
STOP_REASONS = {
    "eos": gettext_lazy("the end token"),
    "max_len": gettext_lazy("the token limit"),
    "time_limit": gettext_lazy("the time limit"),
    "cancelled": gettext_lazy("the Cancel button"),
    ENDED_BY_SESSION: gettext_lazy("the end of the session"),
    "worker_lost": gettext_lazy("the loss of its worker"),
    "no_worker": gettext_lazy("no worker taking it"),
    "steps_lost": gettext_lazy("steps lost on their way"),
}


def stop_reason(reason: str) -> tuple[str, bool]:
    """What stopped a run, in the reader's language, and whether it was an error the reader may want the code of."""
    known = STOP_REASONS.get(reason)
    return (str(known), False) if known is not None else (str(gettext_lazy("an error")), True)


def run_tokens(frames: list[dict[str, Any]]) -> list[str]:
    """A run's output tokens, one per step (a beam search's: the best beam's)."""
    tokens = []
    for frame in frames:
        if frame.get("type") == "token":
            tokens.append(str(frame.get("token", "")))
        elif frame.get("type") == "beams":
            beams = frame.get("beams") or [{}]
            tokens.append(str(beams[0].get("token", "")))
    return tokens


def session_history(session: LiveSession, user: Any = None) -> dict[str, Any]:
    """A session's history: its runs' transcripts, its questions with their counts and reveals; for a participant
    (`user`), their own answer to each question and their score. It reads and writes nothing else: a run no screen
    kept is shown from its worker's copy while that lasts (session_run keeps it at the console's next run or the end).

    While a question about a step is open, that step and every later one of its run are left out (for everyone, as on
    the live screens): the run shows the steps before it and no text or reason yet.
    """
    mine: dict[int, Answer] = {}
    if user is not None and user.is_authenticated:
        mine = {a.question_id: a for a in Answer.objects.filter(question__session=session, participant__user=user)}
    asked = session.questions.select_related("training_run", "experiment_run")  # a comparison's kind: no query each
    questions = [_question_shown(q, mine.get(q.pk)) for q in asked]
    transcripts = list(session.transcripts.all())
    current = session.run_state.running_request if session.live else None
    unkept = [t.request_id for t in transcripts if t.ended_at is None and t.request_id != current]
    copies = workers_copies(unkept)  # a run that ended while no screen followed it: its worker's copy, read only
    for transcript in transcripts:
        copy = copies.get(transcript.request_id)
        if copy is not None:
            transcript.frames = copy.get("frames", [])
            final = transcript.frames[-1] if transcript.frames else {}
            transcript.text = str(final.get("text", ""))
            transcript.reason = str(final.get("reason") or final.get("code") or "")
    held = open_question(session)
    if held is not None and held.seq is not None and held.kind != Question.CHOICE:
        for transcript in transcripts:
            if transcript.request_id == held.request_id:
                transcript.frames = frames_before_step(transcript.frames or [], held.seq)
                transcript.text, transcript.reason, transcript.held = "", "", True
    for transcript in transcripts:
        transcript.tokens = run_tokens(transcript.frames or [])
        transcript.why, transcript.why_code = stop_reason(transcript.reason) if transcript.reason else ("", False)
    return {"transcripts": transcripts, "questions": questions, "participant": bool(mine) or _sat_in(session, user),
            "my_score": sum(1 for a in mine.values() if a.correct)}


def _question_shown(question: Question, mine: Answer | None) -> dict[str, Any]:
    """A question as the history shows it to this reader: a lesson question's words in the reader's language (its
    prompt, its options as counted and answered, a revealed exercise's explanation), the counts and who was right."""
    found = words(exercise=question.exercise or None, experiment=_experiment_kind(question),
                  options=list(question.options), language=get_language())
    labels = found["labels"] if found else {}
    return {"question": question, "prompt": found["prompt"] if found else question.prompt,
            "counts": {labels.get(choice, choice): n for choice, n in answer_counts(question).items()},
            "answer": labels.get(question.answer, question.answer), "total": question.answers.count(), "mine": mine,
            "mine_choice": labels.get(mine.choice, mine.choice) if mine else None,
            "right": question.answers.filter(correct=True).count(),
            "explanation": found.get("explanation") if found and question.status == Question.REVEALED else None}


def _experiment_kind(question: Question) -> str | None:
    if question.training_run_id is None and question.experiment_run_id is None:
        return None
    return experiment_public(question)["kind"]


def results_by_student(session: LiveSession) -> dict[str, Any]:
    """The instructor's table: one row per participant (by name), one cell per question in the order asked (their
    answer and whether it was right: None before a reveal), and their count of right answers and of answers."""
    asked = list(session.questions.order_by("created_at"))
    given: dict[int, dict[int, Answer]] = {}
    for answer in Answer.objects.filter(question__session=session):
        given.setdefault(answer.participant_id, {})[answer.question_id] = answer
    rows = []
    for seat in Participant.objects.filter(session=session).select_related("user").order_by("user__username"):
        mine = given.get(seat.pk, {})
        cells = [mine.get(q.pk) for q in asked]
        rows.append({"name": seat.user.get_username(), "cells": cells,
                     "right": sum(1 for a in cells if a is not None and a.correct), "answered": len(mine)})
    return {"asked": asked, "rows": rows}


def _sat_in(session: LiveSession, user: Any) -> bool:
    return user is not None and user.is_authenticated and services.is_participant(user, session)


def frames_before_step(frames: list[dict[str, Any]], seq: int) -> list[dict[str, Any]]:
    """The frames before the first one of step `seq` (token or beams): what may be shown while that step is held."""
    for i, frame in enumerate(frames):
        if frame.get("type") in STEP_TYPES and frame.get("seq") == seq:
            return frames[:i]
    return frames


def answers_csv_text(session: LiveSession) -> str:
    """Every answer of the session: question, kind, step, student, answer, right, model's answer, when."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["question", "kind", "prompt", "step", "student", "answer", "correct", "model_answer", "answered_at"])
    answers = (Answer.objects.filter(question__session=session)
               .select_related("question", "participant__user").order_by("question__created_at", "answered_at"))
    for a in answers:
        q = a.question
        writer.writerow([_safe_cell(cell) for cell in (
            q.pk, q.kind, q.prompt, "" if q.seq is None else q.seq, a.participant.user.get_username(), a.choice,
            "" if a.correct is None else int(a.correct), q.answer, a.answered_at.isoformat())])
    return out.getvalue()


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _safe_cell(value: object) -> str:
    """A cell a spreadsheet will not run as a formula (OWASP's CSV injection rule: a leading ' before any cell that
    starts with = + - @ tab or carriage return); every cell, as students and instructors type names and prompts."""
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text
