"""Sessions, seats, questions and answers: the classroom's rules, called by its views and its socket."""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

import segno
from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.utils import timezone

from webapp.accounts.roles import Role, has_role
from webapp.classroom.ballot import (
    CLOSED,
    REVEALED,
    ballot_answer,
    ballot_close,
    ballot_counts,
    ballot_mine,
    ballot_open,
)
from webapp.classroom.codes import new_code, normalize_code
from webapp.classroom.models import VIEWS, Answer, LiveSession, Participant, Question, Run
from webapp.playground.services import playground_models
from webapp.registry.models import TrainedModel

MAX_OPTIONS = 8
MAX_CHOICE_CHARS = 80


class ClassroomError(ValueError):
    """An action the classroom refuses; `code` goes into the error frame."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# -- sessions ------------------------------------------------------------------------------------


def session_models(user: Any) -> list[TrainedModel]:
    """The models an instructor may teach with: every published one, and the ones this instructor made."""
    visible = {m.name: m for m in playground_models(user)}
    for own in TrainedModel.objects.filter(created_by=user):
        visible.setdefault(own.name, own)
    return list(visible.values())


def model_allowed(user: Any, name: str) -> bool:
    return any(m.name == name for m in session_models(user))


def session_create(*, instructor: Any, title: str, model_name: str) -> LiveSession:
    """A new live session with a fresh join code (ClassroomError when the model is not the instructor's to use)."""
    if not model_allowed(instructor, model_name):
        raise ClassroomError("unknown_model", f"no model named {model_name[:80]!r} is available to you")
    for _ in range(20):
        try:
            with transaction.atomic():
                return LiveSession.objects.create(instructor=instructor, title=title.strip()[:120] or model_name,
                                                  model_name=model_name, code=new_code())
        except IntegrityError:  # the code was taken: one chance in billions, draw again
            continue
    raise ClassroomError("internal", "could not draw a free join code")


def session_by_code(code: str) -> LiveSession | None:
    return LiveSession.objects.select_related("instructor").filter(code=normalize_code(code)).first()


def can_drive(user: Any, session: LiveSession) -> bool:
    """The session's own instructor drives it, and admins may."""
    return user.is_authenticated and (user.pk == session.instructor_id or has_role(user, Role.ADMIN))


def is_participant(user: Any, session: LiveSession) -> bool:
    return Participant.objects.filter(session=session, user=user).exists()


def session_join(*, user: Any, session: LiveSession) -> Participant | None:
    """Seat a user in a live session (the instructor takes no seat); ClassroomError once it ended."""
    if not session.live:
        raise ClassroomError("ended", "this session has ended")
    if user.pk == session.instructor_id:
        return None
    participant, _ = Participant.objects.get_or_create(session=session, user=user)
    return participant


def session_end(*, session: LiveSession) -> LiveSession:
    if session.ended is None:
        session.ended = timezone.now()
        session.save(update_fields=["ended"])
        Participant.objects.filter(session=session).update(present=False)
        questions_close(session=session)
    return session


def sessions_for(user: Any) -> dict[str, list[LiveSession]]:
    """What /classroom/ lists: the sessions a user leads (live, past) and the ones they sat in."""
    led = list(LiveSession.objects.filter(instructor=user))
    joined = list(LiveSession.objects.filter(participants__user=user).select_related("instructor"))
    return {"live": [s for s in led if s.live], "past": [s for s in led if not s.live], "joined": joined}


def session_state_update(*, session: LiveSession, **changes: Any) -> dict[str, Any]:
    """Merge changes into the session's state and save it; returns the new state."""
    state = dict(session.state)
    state.update(changes)
    session.state = state
    fields = ["state"]
    if session.started is None and changes.get("request_id"):
        session.started = timezone.now()
        fields.append("started")
    session.save(update_fields=fields)
    return state


def parse_views(frame: dict[str, Any], n_layers: int | None) -> dict[str, Any]:
    """A console's `views` frame: which views the students see, and which layer and head."""
    views = frame.get("views")
    if not isinstance(views, list) or not all(isinstance(v, str) and v in VIEWS for v in views):
        raise ClassroomError("bad_params", f"views must be a list of: {', '.join(VIEWS)}")
    layer = frame.get("layer")
    if layer is not None and (isinstance(layer, bool) or not isinstance(layer, int) or layer < 0
                              or (n_layers is not None and layer >= n_layers)):
        raise ClassroomError("bad_params", "layer must be a decoder layer's index, from 0")
    head = frame.get("head", "mean")
    if head != "mean" and (isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < 64):
        raise ClassroomError("bad_params", "head must be a head's index, from 0, or \"mean\"")
    return {"views": list(dict.fromkeys(views)), "layer": layer, "head": head}


def qr_svg(url: str) -> str:
    """The join link as an inline SVG QR code (segno), dark on white, sized by the page."""
    return segno.make(url, error="m").svg_inline(scale=8, border=2, dark="#111", light="#fff")


# -- questions and answers -----------------------------------------------------------------------


@dataclass(frozen=True)
class QuestionSpec:
    """A checked `question` frame."""

    kind: str
    prompt: str
    options: list[str]


def parse_question(frame: dict[str, Any]) -> QuestionSpec:
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
    state = session.state
    if spec.kind != Question.CHOICE and (request_id is None or seq is None):
        raise ClassroomError("not_stepping", "start a step-by-step decode (Step) before asking about the next step")
    questions_close(session=session)
    question = Question.objects.create(
        session=session, kind=spec.kind, prompt=spec.prompt, options=options if options is not None else spec.options,
        request_id=request_id or "", seq=seq, layer=state.get("layer"), head=str(state.get("head", "mean")))
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
    return session.questions.filter(status=Question.OPEN).order_by("-created").first()


@dataclass(frozen=True)
class Asked:
    """What checking an answer needs of its question, kept per process (it does not change while open)."""

    session_id: int
    kind: str
    options: tuple[str, ...]


_asked: dict[int, Asked] = {}


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


def answer_submit(*, session_id: int, user_id: int, question_id: Any, choice: Any) -> str:
    """Take one participant's answer (the caller knows the user has a seat): once per question, while it is open.

    Counted in Redis (ballot.py); the database gets it when the question closes.
    """
    if isinstance(question_id, bool) or not isinstance(question_id, int):
        raise ClassroomError("bad_params", "question must be the id a question frame gave")
    question = asked(question_id, session_id)
    if question is None or question.session_id != session_id:
        raise ClassroomError("not_found", "no such question in this session")
    choice = check_choice(question, choice)
    counted, why = ballot_answer(question_id, user_id, choice)
    if counted:
        return choice
    if why == "already":
        raise ClassroomError("already_answered", "you already answered this question")
    if why == REVEALED:
        raise ClassroomError("revealed", "the answer has been revealed: answers are closed")
    raise ClassroomError("not_open", "this question is not open")


def answers_persist(question: Question, taken: dict[int, str]) -> None:
    """Keep the answers a closed ballot took (each once: a second close adds nothing)."""
    seats = dict(Participant.objects.filter(session_id=question.session_id, user_id__in=list(taken))
                 .values_list("user_id", "pk"))
    Answer.objects.bulk_create(
        [Answer(question=question, participant_id=seats[user], choice=choice)
         for user, choice in taken.items() if user in seats], ignore_conflicts=True)


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
        question.revealed = timezone.now()
        question.save(update_fields=["status", "answer", "revealed"])
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
    return scores_by_user(session).get(user.pk, 0)


def presence_set(*, session: LiveSession, user: Any, present: bool) -> None:
    Participant.objects.filter(session=session, user=user).update(present=present, last_seen=timezone.now())


# -- history -------------------------------------------------------------------------------------


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


def history(session: LiveSession) -> dict[str, Any]:
    """A session's transcript: its runs, its questions with their counts and reveals."""
    questions = [{"question": q, "counts": answer_counts(q), "total": q.answers.count()}
                 for q in session.questions.all()]
    return {"runs": list(session.runs.all()), "questions": questions}


def answers_csv(session: LiveSession) -> str:
    """Every answer of the session: question, kind, step, student, answer, right, model's answer, when."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["question", "kind", "prompt", "step", "student", "answer", "correct", "model_answer", "answered_at"])
    answers = (Answer.objects.filter(question__session=session)
               .select_related("question", "participant__user").order_by("question__created", "at"))
    for a in answers:
        q = a.question
        writer.writerow([q.pk, q.kind, q.prompt, "" if q.seq is None else q.seq, a.participant.user.get_username(),
                         _safe_cell(a.choice), "" if a.correct is None else int(a.correct), _safe_cell(q.answer),
                         a.at.isoformat()])
    return out.getvalue()


def _safe_cell(value: str) -> str:
    """A cell a spreadsheet will not run as a formula (students type their answers)."""
    return "'" + value if value[:1] in ("=", "+", "-", "@") else value


def session_model_fields(*, user: Any, name: str) -> dict[str, Any]:
    """The registry entry a session decodes with, as a playground job carries it (the instructor may use it)."""
    model = next((m for m in session_models(user) if m.name == name), None)
    if model is None:
        raise ClassroomError("unknown_model", f"no model named {name[:80]!r} is available to you")
    return {"name": model.name, "path": str(model.folder), "hash": model.checkpoint_hash}


def run_frames(request_id: str) -> list[dict[str, Any]] | None:
    run = Run.objects.filter(request_id=request_id).first()
    return run.frames if run is not None and run.ended is not None else None
