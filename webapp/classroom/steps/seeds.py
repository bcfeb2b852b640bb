"""Add my seed: after the reveal of a comparison predicted over seeds, each student may train one more seed of it.

The seed is a one-seed sweep of the question's own configuration (its run's parameters with `seed` the student's and
`seeds` 1), so every arm trains that seed and the verdict can count it; it goes on the `experiments` queue on the
student's daily experiments quota (experiment_run_request: a seed whose result is stored already costs nothing and
is in at once). Its result is merged into the class's (comparisons.class_result) once it finishes, and every screen
is told (experiment_progress.watch_seed). The seed a student gets is `STUDENT_SEED_FROM + SEEDS_PER_STUDENT * user
id + k` for their k-th seed of that question: never one of the class's (the shipped and class sweeps train seeds 0 to
15), never another student's, and the same comparison gives a student the same seed in every session (its result
kept). One seed pending per student; at most CLASSROOM_SEEDS_PER_SESSION asked for per session (a failed one counts);
the console closes and reopens the window (`LiveSession.seeds_open`).
"""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from webapp.classroom.errors import ClassroomError
from webapp.classroom.models import AddedSeed, LiveSession, Question
from webapp.classroom.steps.comparisons import experiment_answer, experiment_revealed
from webapp.experiments.models import ExperimentRun
from webapp.experiments.services import QuotaExceeded, experiment_run_request

STUDENT_SEED_FROM = 1000  # above every class seed (SHIPPED_SEEDS, SWEEP_SEEDS: 0 to 15)
SEEDS_PER_STUDENT = 100  # a student's seeds of one question: STUDENT_SEED_FROM + SEEDS_PER_STUDENT * id + k, k < this
PENDING = (ExperimentRun.Status.QUEUED, ExperimentRun.Status.RUNNING)


def seeds_cap() -> int:
    return settings.CLASSROOM_SEEDS_PER_SESSION


def student_seed(user_id: int, k: int) -> int:
    """A student's k-th seed of a question."""
    return STUDENT_SEED_FROM + SEEDS_PER_STUDENT * user_id + k


def revealed_sweep(session: LiveSession) -> Question | None:
    """The comparison revealed on every screen now, predicted over seeds (a sweep with a verdict); None when the
    question on screen is another (or open, or none)."""
    revealed = session.run_state.revealed
    if not revealed:
        return None
    latest = session.questions.order_by("-created_at", "-pk").select_related("experiment_run").first()
    if latest is None or latest.pk != revealed or latest.status != Question.REVEALED:
        return None
    run = latest.experiment_run
    if run is None or run.kind != "sweep" or run.status != ExperimentRun.Status.SUCCEEDED or "verdict" not in run.result:
        return None
    return latest


def seeds_counts(session: LiveSession, question: Question | None = None) -> dict[str, Any]:
    """The `seeds` frame: whether the window is open, the session's cap and how many it has left, and for the
    question on screen how many seeds the class added (in) and how many still train (pending)."""
    question = question if question is not None else revealed_sweep(session)
    asked = session.added_seeds.count()
    frame: dict[str, Any] = {"type": "seeds", "question": question.pk if question else None,
                             "open": session.seeds_open, "cap": seeds_cap(), "left": max(0, seeds_cap() - asked),
                             "added": 0, "pending": 0, "failed": 0}
    if question is not None:
        for status in question.added_seeds.values_list("run__status", flat=True):
            key = ("pending" if status in PENDING else "added" if status == ExperimentRun.Status.SUCCEEDED
                   else "failed")
            frame[key] += 1
    return frame


def seed_add(*, session_id: int, user: Any, question_id: Any) -> tuple[AddedSeed, dict[str, Any]]:
    """A student's `add_seed`: their seed of the revealed comparison, queued on their quota, and the `seeds` frame
    that counts it; ClassroomError why not (`not_revealed`, `seeds_closed`, `seeds_full`, `seed_pending`, `quota`)."""
    with transaction.atomic():
        session = LiveSession.objects.select_for_update().filter(pk=session_id).first()
        if session is None or not session.live:
            raise ClassroomError("ended", "this session has ended")
        question = revealed_sweep(session)
        if question is None or (question_id is not None and question_id != question.pk):
            raise ClassroomError("not_revealed", "a seed is added to a comparison predicted over seeds, once it is "
                                                 "revealed and while it is on the screens")
        if not session.seeds_open:
            raise ClassroomError("seeds_closed", "the instructor has closed adding seeds")
        if session.added_seeds.count() >= seeds_cap():
            raise ClassroomError("seeds_full", f"this session has had its {seeds_cap()} added seeds")
        mine = session.added_seeds.filter(user=user)
        if mine.filter(run__status__in=PENDING).exists():
            raise ClassroomError("seed_pending", "your seed is still training: add another once it is in")
        k = mine.filter(question=question).count()
        if k >= SEEDS_PER_STUDENT:
            raise ClassroomError("seeds_full", f"you have added {SEEDS_PER_STUDENT} seeds to this question")
        seed = student_seed(user.pk, k)
        params = {**question.experiment_run.params, "seed": seed, "seeds": 1}
        try:
            run = experiment_run_request(user=user, kind="sweep", params=params).run
        except QuotaExceeded as refusal:
            raise ClassroomError("quota", str(refusal)) from refusal
        added = AddedSeed.objects.create(session=session, question=question, user=user, run=run, seed=seed)
        return added, seeds_counts(session, question)


def seed_finished(added_id: int) -> tuple[bool, AddedSeed | None]:
    """(still to follow, the added seed to tell the screens of now): its run has ended and no process has told them
    yet, and this call claims the telling (once, whichever process asks first). (True, None) while it trains;
    (False, None) when it was told already or is gone."""
    added = AddedSeed.objects.filter(pk=added_id).select_related("run", "question", "session").first()
    if added is None or added.announced_at is not None:
        return False, None
    if added.run.status in PENDING:
        return True, None
    if AddedSeed.objects.filter(pk=added_id, announced_at__isnull=True).update(announced_at=timezone.now()) != 1:
        return False, None
    return False, added


def seeds_unannounced(session: LiveSession) -> list[int]:
    """The session's added seeds whose end no screen has heard of yet (a process that followed them went away)."""
    return list(session.added_seeds.filter(announced_at__isnull=True).values_list("pk", flat=True))


def seeds_window(*, session: LiveSession, frame: dict[str, Any]) -> LiveSession:
    """The console's `seeds` frame: {"open": true | false}."""
    unknown = sorted(set(frame) - {"type", "open"})
    if unknown:
        raise ClassroomError("bad_params", f"unknown field {unknown[0][:40]!r}")
    if not isinstance(frame.get("open"), bool):
        raise ClassroomError("bad_params", "open must be true or false")
    session.seeds_open = frame["open"]
    session.save(update_fields=["seeds_open"])
    return session


def seed_frame(added: AddedSeed) -> dict[str, Any]:
    """The `seed_added` frame every screen gets when a student's seed ends: the seed, how it ended, and the
    comparison as the reveal gives it with the class's added seeds (their curves in `html`, the verdict over every
    seed), with the window's counts (`seeds`)."""
    question = added.question
    measured = experiment_answer(question)
    experiment = {**experiment_revealed(question), "kept": measured["kept"], "finals": measured["finals"],
                  **{k: measured[k] for k in ("verdict", "machine", "added") if measured.get(k)}}
    return {"type": "seed_added", "question": question.pk, "seed": added.seed, "status": added.run.status,
            "experiment": experiment, "seeds": seeds_counts(added.session, question),
            "lesson": {"exercise": None, "options": question.options, "experiment": experiment["kind"]}}
