"""Prediction questions: opening one, taking each student's answer once, the reveal and the scores."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from webapp.classroom.ballot import (
    CLOSED,
    REVEALED,
    ballot_answer_async,
    ballot_close,
    ballot_counts,
    ballot_mine,
    ballot_open,
)
from webapp.classroom.errors import ClassroomError
from webapp.classroom.models import Answer, LiveSession, Participant, Question

MAX_OPTIONS = 8
MAX_CHOICE_CHARS = 80


@dataclass(frozen=True)
class QuestionSpec:
    """A checked `question` frame."""

    kind: str
    prompt: str
    options: list[str]


QUESTION_FIELDS = ("type", "kind", "prompt", "options")


def parse_question(frame: dict[str, Any]) -> QuestionSpec:
    """A console's `question` frame (or a plan's question step), checked; ClassroomError naming what is wrong."""
    unknown = sorted(set(frame) - set(QUESTION_FIELDS))
    if unknown:
        raise ClassroomError("bad_params", f"unknown field {unknown[0][:40]!r}")
    kind = frame.get("kind")
    kinds = [k for k, _ in Question.KINDS]
    if kind not in kinds:
        raise ClassroomError("bad_params", f"kind must be one of: {', '.join(kinds)}")
    prompt = frame.get("prompt", "")
    if not isinstance(prompt, str) or len(prompt) > 300:
        raise ClassroomError("bad_params", "prompt must be text of at most 300 characters")
    options: list[str] = []
    if kind == Question.CHOICE:
        raw = frame.get("options")
        if (not isinstance(raw, list) or not 2 <= len(raw) <= MAX_OPTIONS
                or not all(isinstance(o, str) and o.strip() and len(o) <= MAX_CHOICE_CHARS for o in raw)):
            raise ClassroomError("bad_params", f"a multiple-choice question needs 2 to {MAX_OPTIONS} options of text")
        options = list(dict.fromkeys(o.strip() for o in raw))
        if len(options) < 2:
            raise ClassroomError("bad_params", "the options must differ")
        if not prompt.strip():
            raise ClassroomError("bad_params", "a multiple-choice question needs a prompt")
    return QuestionSpec(kind=kind, prompt=prompt.strip(), options=options)


def question_open(*, session: LiveSession, spec: QuestionSpec, request_id: str | None, seq: int | None,
                  options: list[str] | None = None) -> Question:
    """Open a question (any open one closes first). Model questions name the step they are about."""
    if not session.live:
        raise ClassroomError("ended", "this session has ended")
    state = session.run_state
    if spec.kind != Question.CHOICE and (request_id is None or seq is None):
        raise ClassroomError("not_stepping", "start a step-by-step decode (Step) before asking about the next step")
    questions_close(session=session)
    question = Question.objects.create(
        session=session, kind=spec.kind, prompt=spec.prompt, options=options if options is not None else spec.options,
        request_id=request_id or "", seq=seq, layer=state.layer, head=str(state.head))
    _asked.pop(question.pk, None)  # a deleted question's id can come back (SQLite): never check against its options
    ballot_open(question.pk)
    return question


def questions_close(*, session: LiveSession) -> int:
    """Close the session's open question without a reveal (its answers kept); returns how many closed."""
    closed = 0
    for question in session.questions.filter(status=Question.OPEN):
        answers_persist(question, ballot_close(question.pk, CLOSED))
        question.status = Question.CLOSED
        question.save(update_fields=["status"])
        closed += 1
    return closed


def open_question(session: LiveSession) -> Question | None:
    return session.questions.filter(status=Question.OPEN).order_by("-created_at").first()


@dataclass(frozen=True)
class Asked:
    """What checking an answer needs of its question, kept per process (it does not change while open)."""

    session_id: int
    kind: str
    options: tuple[str, ...]


_asked: dict[int, Asked] = {}


def asked_cached(question_id: int, session_id: int) -> Asked | None:
    """The question as this process read it already (None: read it with asked())."""
    found = _asked.get(question_id)
    return found if found is not None and found.session_id == session_id else None


def asked(question_id: int, session_id: int | None = None) -> Asked | None:
    """The question's kind and options; read again when it is not the session's (SQLite may reuse a deleted id)."""
    found = _asked.get(question_id)
    if found is None or (session_id is not None and found.session_id != session_id):
        question = Question.objects.filter(pk=question_id).first()
        if question is None:
            return None
        found = _asked[question_id] = Asked(question.session_id, question.kind, tuple(question.options))
    return found


def check_choice(question: Asked | Question, choice: Any) -> str:
    """A student's answer, checked against what the question allows."""
    if not isinstance(choice, str) or not choice.strip() or len(choice) > MAX_CHOICE_CHARS:
        raise ClassroomError("bad_params", f"an answer is text of 1 to {MAX_CHOICE_CHARS} characters")
    choice = choice.strip()
    typed_ok = question.kind == Question.NEXT_TOKEN  # a student may type a token the top-k did not list
    if question.options and choice not in question.options and not typed_ok:
        raise ClassroomError("bad_params", "pick one of the question's options")
    return choice


def answer_checked(*, session_id: int, question_id: Any, choice: Any, question: Asked | None) -> str:
    """The answer as it will be counted, or ClassroomError; `question` is asked(question_id, session_id)."""
    if question is None or question.session_id != session_id:
        raise ClassroomError("not_found", "no such question in this session")
    return check_choice(question, choice)


def answer_refusal(why: str) -> ClassroomError:
    """Why the ballot did not count an answer, as the student's error frame says it."""
    if why == "already":
        return ClassroomError("already_answered", "you already answered this question")
    if why == REVEALED:
        return ClassroomError("revealed", "the answer has been revealed: answers are closed")
    return ClassroomError("not_open", "this question is not open")


def question_id_checked(question_id: Any) -> int:
    if isinstance(question_id, bool) or not isinstance(question_id, int):
        raise ClassroomError("bad_params", "question must be the id a question frame gave")
    return question_id


async def answer_take(*, session_id: int, user_id: int, question_id: Any, choice: Any) -> tuple[int, str]:
    """Take one participant's answer (the caller knows the user has a seat): once per question, while it is open.

    Returns (question id, the answer as counted), or raises ClassroomError saying why it was not taken. Counted in
    Redis in one call (ballot.py), on the caller's event loop; the database gets it when the question closes. The
    question is read from the database once per process (asked, on a thread of Channels' pool, which keeps its
    connections fresh), then from memory.
    """
    question_id = question_id_checked(question_id)
    found = asked_cached(question_id, session_id)
    if found is None:
        found = await database_sync_to_async(asked, thread_sensitive=False)(question_id, session_id)
    choice = answer_checked(session_id=session_id, question_id=question_id, choice=choice, question=found)
    counted, why = await ballot_answer_async(question_id, user_id, choice)
    if not counted:
        raise answer_refusal(why)
    return question_id, choice


def answers_persist(question: Question, taken: dict[int, tuple[str, Any]]) -> None:
    """Keep the answers a closed ballot took, each with the time it came (each once: a second close adds nothing)."""
    seats = dict(Participant.objects.filter(session_id=question.session_id, user_id__in=list(taken))
                 .values_list("user_id", "pk"))
    now = timezone.now()
    Answer.objects.bulk_create(
        [Answer(question=question, participant_id=seats[user], choice=choice, answered_at=at or now)
         for user, (choice, at) in taken.items() if user in seats], ignore_conflicts=True)


def answer_counts(question: Question) -> dict[str, int]:
    """How many chose each answer (options first, in order, then typed ones), from the database."""
    counts = {option: 0 for option in question.options}
    for row in question.answers.values("choice").annotate(n=Count("id")).order_by("choice"):
        counts[row["choice"]] = row["n"]
    return counts


def live_counts(question_id: int) -> dict[str, int]:
    """The counts while answers arrive (ballot.py)."""
    found = asked(question_id)
    return ballot_counts(question_id, list(found.options) if found is not None else [])


def my_answer(question: Question, user: Any) -> str | None:
    if question.status == Question.OPEN:
        return ballot_mine(question.pk, user.pk)
    mine = question.answers.filter(participant__user=user).first()
    return mine.choice if mine is not None else None


def question_reveal(*, question: Question, answer: str) -> dict[int, tuple[bool, int]]:
    """Close answers, keep the model's answer, mark each answer; returns user id -> (right, session score)."""
    answers_persist(question, ballot_close(question.pk, REVEALED))
    with transaction.atomic():
        question.status = Question.REVEALED
        question.answer = answer
        question.revealed_at = timezone.now()
        question.save(update_fields=["status", "answer", "revealed_at"])
        question.answers.update(correct=False)
        question.answers.filter(choice=answer).update(correct=True)
        if question.kind == Question.NEXT_TOKEN:  # typed answers: case and spaces do not count against a student
            for row in question.answers.filter(correct=False):
                if row.choice.strip().casefold() == answer.strip().casefold():
                    row.correct = True
                    row.save(update_fields=["correct"])
    right = dict(question.answers.values_list("participant__user_id", "correct"))
    scores = scores_by_user(question.session)
    return {uid: (bool(ok), scores.get(uid, 0)) for uid, ok in right.items()}


def scores_by_user(session: LiveSession) -> dict[int, int]:
    rows = (Participant.objects.filter(session=session)
            .annotate(score=Count("answers", filter=Q(answers__correct=True))).values_list("user_id", "score"))
    return dict(rows)


def class_scores(session: LiveSession) -> list[dict[str, Any]]:
    """The console's table: each participant's name, score and answers given (names: the instructor's eyes only)."""
    rows = (Participant.objects.filter(session=session).select_related("user")
            .annotate(score=Count("answers", filter=Q(answers__correct=True)), answered=Count("answers")))
    return [{"name": p.user.get_username(), "score": p.score, "answered": p.answered, "present": p.present}
            for p in rows]


def score_of(session: LiveSession, user: Any) -> int:
    """This participant's right answers: one count over their own answers (a joining screen asks it; a class of
    hundreds joining at once must not count everyone's for each)."""
    return Answer.objects.filter(participant__session=session, participant__user=user, correct=True).count()
