"""A training comparison the class predicts before its result (the console's `experiment`): the lesson's two,
trained on the `experiments` queue (or read from the lesson's store), or one of the experiments pages' (their shipped
results, else trained on the instructor's quota). Nothing that leads to its run goes to the screens before the
reveal; its progress does (experiment_progress.py); the reveal names the arm that ended lowest, with each arm's loss."""
from __future__ import annotations

from typing import Any

from django.urls import reverse

from webapp.classroom import questions, wording
from webapp.classroom.errors import ClassroomError
from webapp.classroom.models import LiveSession, Question
from webapp.experiments.models import ExperimentRun
from webapp.experiments.pages import PAGES as EXPERIMENT_PAGES
from webapp.experiments.services import QuotaExceeded, experiment_run_request
from webapp.lesson.content import PREDICTIONS
from webapp.lesson.models import TrainingRun
from webapp.lesson.services import TRAIN_KINDS, training_request

FIELDS = ("kind", "lang")  # `lang`: what consoles sent before each screen had its own (accepted, unused)


def predicted_now(model: type, run_id: int) -> bool:
    """Whether an open question of a live session predicts this run (webapp/ops/sealed.py's check): its page, panel
    and socket show nothing of it until the reveal or the close."""
    field = {TrainingRun: "training_run_id", ExperimentRun: "experiment_run_id"}.get(model)
    if field is None:
        return False
    return Question.objects.filter(status=Question.OPEN, session__ended_at__isnull=True, **{field: run_id}).exists()


def comparison_checked(fields: dict[str, Any]) -> str:
    """An `experiment` step's fields -> the comparison's kind; ClassroomError naming what is wrong."""
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise ClassroomError("bad_params", f"unknown field {unknown[0][:40]!r}")
    kind = fields.get("kind")
    if kind not in PREDICTIONS:
        raise ClassroomError("bad_params", f"no experiment {kind!r:.40}: its kind is one of: {', '.join(PREDICTIONS)}")
    return kind


def experiment_ask(*, session: LiveSession, user: Any, frame: dict[str, Any]) -> Question:
    """A console's `experiment` frame: the class predicts a training comparison's outcome (a multiple-choice question
    over its arms, kept with English keys as an exercise is) while it trains, or is read from where it is kept (the
    lesson's comparisons, and the experiments pages' with their shipped results); the reveal is its result."""
    kind = comparison_checked({k: v for k, v in frame.items() if k != "type"})
    asked = wording.asked_words(experiment=kind)
    spec = questions.QuestionSpec(kind=Question.CHOICE, prompt=asked["prompt"], options=asked["options"])
    lesson_run = experiment_run = None
    if kind in TRAIN_KINDS:
        lesson_run = training_request(user=user, kind=kind)
    else:
        page, preset, _ = wording.COMPARISONS[kind]
        run_kind, params = EXPERIMENT_PAGES[page][preset]
        try:
            experiment_run = experiment_run_request(user=user, kind=run_kind, params=params).run
        except QuotaExceeded as refusal:
            raise ClassroomError("quota", str(refusal)) from refusal
    question = questions.question_open(session=session, spec=spec, request_id=None, seq=None)
    question.training_run, question.experiment_run = lesson_run, experiment_run
    question.save(update_fields=["training_run", "experiment_run"])
    return question


BY_SWITCH = {"norm_position": "norm-position", "warmup": "warmup", "residual": "residual"}  # a run's switch: its kind


def _predicted(question: Question) -> tuple[str, Any] | None:
    """The comparison a question predicts: its class kind and its run (None for any other question)."""
    if question.training_run_id is not None:
        run = question.training_run
        return run.kind, run
    if question.experiment_run_id is not None:
        run = question.experiment_run
        return BY_SWITCH[run.params.get("switch")], run
    return None


def experiment_public(question: Question) -> dict[str, Any] | None:
    """What a `question` frame says of the comparison it predicts before its reveal: its kind only. Its run, its page
    and its socket would give the answer away (each arm's loss as it trains), so they come with the reveal."""
    if question.training_run_id is None and question.experiment_run_id is None:  # (no query for most questions)
        return None
    return {"kind": _predicted(question)[0]}


def experiment_revealed(question: Question) -> dict[str, Any]:
    """What a `reveal` frame says of the comparison: its run and where its figures are."""
    kind, run = _predicted(question)
    if isinstance(run, TrainingRun):
        return {"kind": kind, "run": run.pk, "source": "lesson", "url": reverse("lesson:run", args=[run.pk])}
    return {"kind": kind, "run": run.pk, "source": "experiments",
            "url": reverse("experiments:run_result", args=[run.pk])}


def experiment_progress(question: Question) -> dict[str, Any] | None:
    """How far the comparison a question predicts has come: `status` (queued, running, succeeded, failed),
    `progress` 0..1, and once its result is in, `kept` (measured before the question) or `took_s` (how long it
    trained for this question). None for any other question."""
    predicted = _predicted(question) if question.training_run_id or question.experiment_run_id else None
    if predicted is None:
        return None
    run = predicted[1]
    run.refresh_from_db(fields=["status", "progress", "updated_at"])
    found: dict[str, Any] = {"status": run.status, "progress": round(float(run.progress or 0.0), 3)}
    if run.status == TrainingRun.Status.SUCCEEDED:
        kept = _kept(run, question)
        found["kept"] = kept
        if not kept:
            found["took_s"] = round(max(0.0, (run.updated_at - run.created_at).total_seconds()), 1)
    return found


def _kept(run: Any, question: Question) -> bool:
    return bool(getattr(run, "shipped", False)) or run.updated_at < question.created_at


def _final(arm: dict[str, Any]) -> float:
    """An arm's last training loss; a run that diverged (or has none) ends above every other."""
    loss = arm.get("final_loss") if "run" not in arm else (arm["run"].get("final_loss")
                                                           if arm["run"].get("status") == "completed" else None)
    return float("inf") if loss is None else float(loss)


def experiment_answer(question: Question) -> dict[str, Any] | None:
    """For a question that predicts a comparison: `answer`, the option of the arm that ended with the lowest training
    loss; `finals`, each option's last training loss (None: it diverged); `kept`, whether the result was measured
    before the question (not for it). ClassroomError `not_finished` while it trains; None for any other question."""
    if question.training_run_id is None and question.experiment_run_id is None:
        return None
    kind, run = _predicted(question)
    run.refresh_from_db()
    if run.status != TrainingRun.Status.SUCCEEDED:
        raise ClassroomError("not_finished", f"the experiment has not finished (it is {run.status}); reveal it when "
                                             "its result is in")
    labels = list(wording.arms(kind))
    by_label = {arm["label"]: arm for arm in run.result["arms"]}
    best = min(run.result["arms"], key=_final)
    finals = []
    for option, label in zip(question.options, labels, strict=True):
        loss = _final(by_label[label]) if label in by_label else float("inf")
        finals.append({"option": option, "loss": None if loss == float("inf") else round(loss, 4)})
    return {"answer": question.options[labels.index(best["label"])], "finals": finals, "kept": _kept(run, question)}
