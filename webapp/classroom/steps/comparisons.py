"""A training comparison the class predicts before its result (the console's `experiment`): the lesson's two or one
of the experiments pages', a sweep of seeds: its kept 16-seed result (stored or shipped) when there is one, else
CLASS_SEEDS seeds (or the 4, 8 or 16 the console names) read where kept or trained on the `experiments` queue on the
instructor's quota. Nothing that leads to its run goes to the screens before the reveal; its progress does
(experiment_progress.py). The reveal gives the seeds' verdict (modelcore.experiments.verdict): an arm only when it
ends lowest in at least 90 % of the seeds and its mean is lower by more than twice the gap's standard error, else
"no reliable difference", an option every such question offers.
Questions asked before (one run of seed 0: a lesson TrainingRun or a `compare` run) keep their lowest arm."""
from __future__ import annotations

from typing import Any

from django.urls import reverse

from modelcore.experiments.merge import merge_sweeps
from modelcore.experiments.spec import SWEEP_SEEDS
from modelcore.experiments.verdict import MIN_SHARE, NO_RELIABLE_DIFFERENCE
from webapp.classroom import questions, wording
from webapp.classroom.errors import ClassroomError
from webapp.classroom.models import LiveSession, Question
from webapp.experiments.models import ExperimentRun
from webapp.experiments.pages import SHIPPED_SEEDS, sweep_preset
from webapp.experiments.services import QuotaExceeded, experiment_result, experiment_run_request
from webapp.lesson.content import PREDICTIONS
from webapp.lesson.models import TrainingRun

FIELDS = ("kind", "lang", "seeds")  # `lang`: what consoles sent before each screen had its own (accepted, unused)
CLASS_SEEDS = 8  # seeds a class's sweep trains unless the console names another count (SWEEP_SEEDS)


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
    seeds = fields.get("seeds", CLASS_SEEDS)
    if isinstance(seeds, bool) or seeds not in SWEEP_SEEDS:
        raise ClassroomError("bad_params", f"seeds is one of {', '.join(map(str, SWEEP_SEEDS))}")
    return kind


BY_KIND = {"mask": "mask", "ffn": "ffn", "norm-position": "norm_position", "warmup": "warmup",
           "residual": "residual"}  # a class kind: its comparison (modelcore.experiments.comparisons)


def sweep_params(kind: str, seeds: int) -> dict[str, Any]:
    """The `sweep` run of a class comparison with this many seeds (webapp.experiments.pages.sweep_preset)."""
    return sweep_preset(BY_KIND[kind], seeds)


def _class_sweep(*, user: Any, kind: str, seeds: int | None) -> ExperimentRun:
    """The sweep a class predicts: with the seeds the console named, else a kept 16-seed result when there is one,
    else 8 seeds trained now (quota permitting)."""
    if seeds is None and experiment_result(kind="sweep", params=sweep_params(kind, SHIPPED_SEEDS)) is not None:
        seeds = SHIPPED_SEEDS
    try:
        return experiment_run_request(user=user, kind="sweep", params=sweep_params(kind, seeds or CLASS_SEEDS)).run
    except QuotaExceeded as refusal:
        raise ClassroomError("quota", str(refusal)) from refusal


def experiment_ask(*, session: LiveSession, user: Any, frame: dict[str, Any]) -> Question:
    """A console's `experiment` frame: the class predicts a training comparison's outcome (a multiple-choice question
    over its arms and "no reliable difference", kept with English keys as an exercise is) while its seeds train, or
    is read from where it is kept; the reveal is the seeds' verdict."""
    fields = {k: v for k, v in frame.items() if k != "type"}
    kind = comparison_checked(fields)
    asked = wording.asked_words(experiment=kind)
    spec = questions.QuestionSpec(kind=Question.CHOICE, prompt=asked["prompt"], options=asked["options"])
    run = _class_sweep(user=user, kind=kind, seeds=fields.get("seeds"))
    question = questions.question_open(session=session, spec=spec, request_id=None, seq=None)
    question.experiment_run = run
    question.save(update_fields=["experiment_run"])
    return question


BY_SWITCH = {comparison: kind for kind, comparison in BY_KIND.items()}  # a run's switch: its class kind


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
    """For a question that predicts a comparison: `answer`, the option the result supports; `finals`, each arm's
    option with its last training loss (a sweep's: the mean over the seeds; None: it diverged); `verdict`, a sweep's
    verdict (modelcore.experiments.verdict's, as its run stored it) and `machine`, what computed it; `kept`, whether
    the result was measured before the question (not for it). ClassroomError `not_finished` while it trains; None for any other question."""
    if question.training_run_id is None and question.experiment_run_id is None:
        return None
    kind, run = _predicted(question)
    run.refresh_from_db()
    if run.status != TrainingRun.Status.SUCCEEDED:
        raise ClassroomError("not_finished", f"the experiment has not finished (it is {run.status}); reveal it when "
                                             "its result is in")
    labels = list(wording.arms(kind))
    if "verdict" in run.result:
        return _sweep_answer(question, run, labels)
    by_label = {arm["label"]: arm for arm in run.result["arms"]}
    best = min(run.result["arms"], key=_final)
    finals = []
    for option, label in zip(question.options, labels, strict=False):
        loss = _final(by_label[label]) if label in by_label else float("inf")
        finals.append({"option": option, "loss": None if loss == float("inf") else round(loss, 4)})
    return {"answer": question.options[labels.index(best["label"])], "finals": finals, "kept": _kept(run, question)}


def class_result(question: Question, run: ExperimentRun) -> tuple[dict[str, Any], int]:
    """A sweep question's result with the seeds its students added since the reveal (steps/seeds.py) that finished,
    in the order they were asked for; and how many those are."""
    added = [seed.run.result for seed in question.added_seeds.filter(run__status=ExperimentRun.Status.SUCCEEDED)
             .select_related("run").order_by("pk")]
    if not added:
        return run.result, 0
    return {**merge_sweeps([run.result, *added]), "params": run.result.get("params")}, len(added)


def _sweep_answer(question: Question, run: ExperimentRun, labels: list[str]) -> dict[str, Any]:
    """The verdict over the question's seeds and those its students added (`added`: how many); the answer revealed
    (and scored) is the question's own, read before any seed was added."""
    result, added = class_result(question, run)
    verdict = result["verdict"]
    answer = verdict["answer"] if verdict else _without_verdict(result["arms"])
    means = {arm["label"]: arm["mean"] for arm in verdict["arms"]} if verdict else {}
    finals = [{"option": option, "loss": round(means[label], 4) if label in means else None}
              for option, label in zip(question.options, labels, strict=False)]
    option = question.options[labels.index(answer)] if answer in labels else NO_RELIABLE_DIFFERENCE
    return {"answer": option, "finals": finals, "verdict": verdict, "kept": _kept(run, question),
            "machine": result.get("machine"), "added": added}


def _without_verdict(arms: list[dict[str, Any]]) -> str:
    """A sweep with no seed completed in every arm has no verdict: the arm that completed in at least 90 % of the
    seeds while every other diverged in as many is the answer, else there is no reliable difference."""
    def completed(arm: dict[str, Any]) -> float:
        return sum(run["status"] == "completed" for run in arm["runs"]) / max(1, len(arm["runs"]))

    lasted = [arm for arm in arms if completed(arm) >= MIN_SHARE]
    if len(lasted) == 1 and all(1 - completed(arm) >= MIN_SHARE for arm in arms if arm is not lasted[0]):
        return lasted[0]["label"]
    return NO_RELIABLE_DIFFERENCE
