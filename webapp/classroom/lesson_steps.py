"""The lesson taught live: the console puts a part of a lesson page on every screen (`lesson`), runs the part's
demonstration once for the whole class (`demo`), asks a page's exercise as a multiple-choice question
(`exercise`), and has the class predict a training comparison's outcome before its result (`experiment`). See
docs/classroom-socket.md.

A demonstration for the class is one request on the `demonstrations` queue, made in the instructor's name (their
limits, the lesson's cache); its result is kept in the session's state, and every screen draws it from there
(GET /classroom/<code>/demo/), so the worker does what one student's Run costs whatever the class's size.

What a screen shows of a step (the part, the demonstration's figures, a comparison's curves) travels in the frame
itself, as `html` in the screen's language: each web process renders it once per language and writes the same text to
each of its sockets, instead of every screen asking for it over HTTP (at 200 screens on one web process that took
3.1 s for the last to get a part; the frame, a few ms per socket)."""
from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

from django.http import HttpRequest
from django.urls import reverse
from django.utils import translation

from webapp.classroom import questions, services, wording
from webapp.classroom.errors import ClassroomError
from webapp.classroom.models import LessonPlan, LiveSession, Question
from webapp.experiments import figures as experiment_figures
from webapp.experiments.models import ExperimentRun
from webapp.experiments.pages import PAGES as EXPERIMENT_PAGES
from webapp.experiments.services import QuotaExceeded, experiment_run_request
from webapp.lesson.content import PREDICTIONS, exercise_right
from webapp.lesson.models import TrainingRun
from webapp.lesson.parts import TEMPLATES, lesson_part
from webapp.lesson.screens import demo_text, part_text, run_panel_text
from webapp.lesson.services import (
    DEFAULT_MODEL,
    DEMO_KINDS,
    TRAIN_KINDS,
    DemoRefused,
    demo_params,
    demo_run,
    training_request,
)

DEMO_FIELDS = ("sentence", "partner", "layer", "head", "query", "norm")


def lesson_frame(lesson: dict[str, Any] | None) -> dict[str, Any] | None:
    """The `lesson` frame every screen gets for the part on show (None: no part has been shown)."""
    if not lesson:
        return None
    url = reverse(f"lesson:{TEMPLATES[lesson['page']]}")
    fragment = reverse("lesson:part", args=[lesson["page"], lesson["part"]]) if lesson["part"] else \
        reverse("lesson:part_top", args=[lesson["page"]])
    return {"type": "lesson", "page": lesson["page"], "part": lesson["part"], "url": url, "fragment": fragment}


def lesson_show(*, session: LiveSession, frame: dict[str, Any]) -> dict[str, Any]:
    """A console's `lesson` frame: the named part goes on every screen (the class's last demonstration goes off)."""
    part = lesson_part(frame.get("page"), frame.get("part", ""))
    if part is None:
        raise ClassroomError("bad_params", "name a lesson page (overview, encoder, decoder, residual-norm, questions, "
                                           "glossary) and one of its parts")
    lesson = {"page": part.page, "part": part.id}
    services.session_state_update(session=session, lesson=lesson, demo=None, experiment_shown=None)
    return lesson


def demo_frame(session: LiveSession, demo: dict[str, Any] | None) -> dict[str, Any] | None:
    """The `demo` frame for the class's demonstration (its figures are read from `url`)."""
    if not demo:
        return None
    return {"type": "demo", "kind": demo["kind"], "model": demo["model"], "params": demo["params"],
            "cached": demo["cached"], "n": demo["n"], "url": reverse("classroom:demo", args=[session.code])}


def _raw(frame: dict[str, Any]) -> dict[str, str]:
    raw: dict[str, str] = {}
    for name in DEMO_FIELDS:
        value = frame.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise ClassroomError("bad_params", f"{name} must be text or a whole number")
        raw[name] = str(value)
    return raw


def demo_for_class(*, session: LiveSession, user: Any, frame: dict[str, Any]) -> dict[str, Any]:
    """A console's `demo` frame: the demonstration computed (or read from the lesson's cache) in the instructor's
    name and kept as the session's; the refusal a student's Run would get (bad input, limits, busy) otherwise."""
    kind = frame.get("kind")
    if kind not in DEMO_KINDS:
        raise ClassroomError("bad_params", f"kind must be one of: {', '.join(DEMO_KINDS)}")
    model = frame.get("model") or DEFAULT_MODEL
    if not isinstance(model, str):
        raise ClassroomError("bad_params", "model must be a model's name")
    raw = _raw(frame)
    try:
        params = demo_params(raw)
        answer = demo_run(user=user, kind=kind, model_name=model, raw=raw)
    except DemoRefused as refusal:
        raise ClassroomError(refusal.code, str(refusal)) from refusal
    before = session.run_state.demo or {}
    demo = {"kind": kind, "model": model, "params": params, "result": answer.result, "cached": answer.cached,
            "n": int(before.get("n", 0)) + 1}
    services.session_state_update(session=session, demo=demo, experiment_shown=None)
    return demo


def exercise_ask(*, session: LiveSession, frame: dict[str, Any]) -> Question:
    """A console's `exercise` frame: the exercise opens as a multiple-choice question, kept with the lesson's English
    words as its keys (each screen shows them in its own language: wording.py); the right option is the exercise's."""
    exercise = wording.asked_words(exercise=frame.get("exercise")) if isinstance(frame.get("exercise"), str) else None
    if exercise is None:
        raise ClassroomError("bad_params", "no lesson exercise has this id")
    spec = questions.QuestionSpec(kind=Question.CHOICE, prompt=exercise["prompt"][:300], options=exercise["options"])
    question = questions.question_open(session=session, spec=spec, request_id=None, seq=None)
    question.exercise = exercise["id"]
    question.save(update_fields=["exercise"])
    return question


def exercise_answer(question: Question) -> tuple[str, str] | None:
    """For a question that asks an exercise: its right option (the lesson's, whatever option the console names) and
    the exercise's explanation, in the language it was asked in; None for any other question."""
    if not question.exercise:
        return None
    return exercise_right(question.exercise, list(question.options))


def experiment_ask(*, session: LiveSession, user: Any, frame: dict[str, Any]) -> Question:
    """A console's `experiment` frame: the class predicts a training comparison's outcome (a multiple-choice question
    over its arms, kept with English keys as an exercise is) while it trains, or is read from where it is kept (the
    lesson's comparisons, and the experiments pages' with their shipped results); the reveal is its result."""
    kind = frame.get("kind")
    if kind not in PREDICTIONS:
        raise ClassroomError("bad_params", f"kind must be one of: {', '.join(PREDICTIONS)}")
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


def plan_choose(*, session: LiveSession, user: Any, frame: dict[str, Any]) -> None:
    """A console's `plan` frame: the session is taught with this plan of the instructor's (its results gather on the
    plan's page), or with none (`null`, or the shipped plan, which is nobody's to gather)."""
    chosen = frame.get("plan")
    plan = None
    if chosen not in (None, "", "shipped"):
        plan = LessonPlan.objects.filter(owner=user, pk=int(chosen) if str(chosen).isdigit() else -1).first()
        if plan is None:
            raise ClassroomError("bad_params", "you have no lesson plan with this number")
    session.plan = plan
    session.save(update_fields=["plan"])


# -- what a screen shows of a step, sent in its frame -------------------------------------------------------------

HTML_KEPT_S = 60.0  # a part follows the registry (the shipped model's card): a minute's copy is fresh enough
_html: OrderedDict[tuple[Any, ...], tuple[float, str]] = OrderedDict()


def scope_language(scope: dict[str, Any]) -> str:
    """The language a socket's pages are in: the language cookie, else the browser's Accept-Language, as the
    pages' LocaleMiddleware reads them."""
    request = HttpRequest()
    request.COOKIES = dict(scope.get("cookies") or {})
    for name, value in scope.get("headers") or ():
        if name == b"accept-language":
            request.META["HTTP_ACCEPT_LANGUAGE"] = value.decode("latin-1")
    return translation.get_language_from_request(request)


def html_key(code: str, frame: dict[str, Any], language: str) -> tuple[Any, ...] | None:
    """Which rendering a frame carries for a screen in `language` (None: the frame carries none)."""
    kind = frame.get("type")
    if kind == "lesson":
        return ("lesson", frame["page"], frame["part"], language)
    if kind == "demo":
        return ("demo", code, frame["n"], language)
    if kind == "reveal" and frame.get("experiment"):
        return ("run", frame["experiment"]["source"], frame["experiment"]["run"], language)
    return None


def html_kept(key: tuple[Any, ...]) -> str | None:
    """The rendering when this process has it fresh (no database, no thread)."""
    found = _html.get(key)
    return found[1] if found is not None and found[0] > time.monotonic() else None


def html_render(key: tuple[Any, ...], user: Any, demo: dict[str, Any] | None = None) -> str:
    """Render what `key` names in its language (a demonstration from `demo`, the session's) and keep it."""
    kind, language = key[0], key[-1]
    with translation.override(language):
        if kind == "lesson":
            text = part_text(key[1], key[2], user)
        elif kind == "demo":
            text = demo_text(demo["kind"], demo["result"], demo["cached"]) if demo else ""
        elif key[1] == "lesson":
            text = run_panel_text(TrainingRun.objects.get(pk=key[2]))
        else:
            text = experiment_result_text(ExperimentRun.objects.get(pk=key[2]))
    _html[key] = (time.monotonic() + HTML_KEPT_S, text)
    _html.move_to_end(key)
    while len(_html) > 256:
        _html.popitem(last=False)
    return text


def with_html(session: LiveSession, frame: dict[str, Any] | None, user: Any, language: str) -> dict[str, Any] | None:
    """A `lesson` or `demo` frame of the session's state with its rendering for this screen (the `session` frame's)."""
    if frame is None:
        return None
    key = html_key(session.code, frame, language)
    text = html_kept(key) or html_render(key, user, session.run_state.demo)
    return {**frame, "html": text}


def experiment_result_text(run: ExperimentRun) -> str:
    """An experiments page comparison's figures, as its run page draws them, in the active language."""
    from django.template.loader import render_to_string

    done = run.status == ExperimentRun.Status.SUCCEEDED
    context = {"run": run, "figures": experiment_figures.run_figures(run.kind, run.result) if done else {},
               "zeros": experiment_figures.zero_layers(run.result) if done else []}
    return render_to_string("experiments/partials/result.html", context)
