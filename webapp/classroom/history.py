"""A session's transcript: its runs as the worker streamed them, its questions and answers, the CSV."""
from __future__ import annotations

import csv
import io
from typing import Any

from django.utils import timezone

from webapp.classroom.models import Answer, LiveSession, Question, Run
from webapp.classroom.questions import answer_counts, open_question
from webapp.classroom.relay import STEP_TYPES
from webapp.classroom.services import session_state_update


def run_started(*, session: LiveSession, request_id: str, source: str, params: dict[str, Any]) -> Run:
    return Run.objects.create(session=session, request_id=request_id, source=source, params=params)


def run_finished(*, request_id: str, frames: list[dict[str, Any]]) -> None:
    """Keep a run's frames (the transcript the history page replays), its text and why it stopped."""
    run = Run.objects.filter(request_id=request_id).first()
    if run is None:
        return
    final = frames[-1] if frames else {}
    run.frames = frames
    run.text = str(final.get("text", ""))[:10_000]
    run.reason = str(final.get("reason") or final.get("code") or "")[:32]
    run.ended = timezone.now()
    run.save(update_fields=["frames", "text", "reason", "ended"])
    tokens = [f.get("token") for f in frames if f.get("type") == "token"]
    session = run.session
    if session.state.get("request_id") == request_id:
        session_state_update(session=session, tokens=tokens, running=False)


def session_history(session: LiveSession) -> dict[str, Any]:
    """A session's transcript: its runs, its questions with their counts and reveals.

    While a question about a step is open, that step and every later one of its run are left out (for everyone, as on
    the live screens): the run shows the steps before it and no text or reason yet.
    """
    questions = [{"question": q, "counts": answer_counts(q), "total": q.answers.count()}
                 for q in session.questions.all()]
    runs = list(session.runs.all())
    held = open_question(session)
    if held is not None and held.seq is not None and held.kind != Question.CHOICE:
        for run in runs:
            if run.request_id == held.request_id:
                run.frames = frames_before_step(run.frames or [], held.seq)
                run.text, run.reason, run.held = "", "", True
    return {"runs": runs, "questions": questions}


def frames_before_step(frames: list[dict[str, Any]], seq: int) -> list[dict[str, Any]]:
    """The frames before the first one of step `seq` (token or beams): what may be shown while that step is held."""
    for i, frame in enumerate(frames):
        if frame.get("type") in STEP_TYPES and frame.get("seq") == seq:
            return frames[:i]
    return frames


def answers_csv(session: LiveSession) -> str:
    """Every answer of the session: question, kind, step, student, answer, right, model's answer, when."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["question", "kind", "prompt", "step", "student", "answer", "correct", "model_answer", "answered_at"])
    answers = (Answer.objects.filter(question__session=session)
               .select_related("question", "participant__user").order_by("question__created", "at"))
    for a in answers:
        q = a.question
        writer.writerow([_safe_cell(cell) for cell in (
            q.pk, q.kind, q.prompt, "" if q.seq is None else q.seq, a.participant.user.get_username(), a.choice,
            "" if a.correct is None else int(a.correct), q.answer, a.at.isoformat())])
    return out.getvalue()


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _safe_cell(value: object) -> str:
    """A cell a spreadsheet will not run as a formula (OWASP's CSV injection rule: a leading ' before any cell that
    starts with = + - @ tab or carriage return); every cell, as students and instructors type names and prompts."""
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def run_frames(request_id: str) -> list[dict[str, Any]] | None:
    run = Run.objects.filter(request_id=request_id).first()
    return run.frames if run is not None and run.ended is not None else None
