"""The lesson's pages, its demonstrations (htmx fragments), exercises and the instructors' progress table."""
from __future__ import annotations

import json
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from webapp.accounts.permissions import instructors_only, signed_in
from webapp.lesson import content
from webapp.lesson.diagram import diagram, norm_names
from webapp.lesson.figures import arm_label, arm_names, figures_for, masks_figure, stacks_figure
from webapp.lesson.models import TrainingRun
from webapp.lesson.parts import TEMPLATES, lesson_part, part_html
from webapp.lesson.services import (
    DEFAULT_MODEL,
    DEFAULT_SENTENCE,
    DEMO_MAX_CHARS,
    DemoRefused,
    demo_run,
    lesson_students,
    progress_reveal,
    progress_revealed,
    progress_table,
    progress_visit,
    training_latest,
    training_queue_place,
    training_request,
    workers_present,
)
from webapp.registry.models import TrainedModel
from webapp.registry.services import models_visible_to


def _model_card(request: HttpRequest) -> dict[str, Any]:
    """The shipped model the pages describe: its configuration and training settings, from the registry."""
    model = TrainedModel.objects.filter(name=DEFAULT_MODEL).first()
    config = model.config if model else {}
    metrics = (model.metrics if model else {}) or {}
    train = metrics.get("train", {}) or {}
    seconds = metrics.get("train_seconds")
    return {"name": DEFAULT_MODEL, "config": config, "train": train, "found": model is not None,
            # How long it trained, as its metrics recorded it: the overview says so rather than "minutes".
            "steps": metrics.get("step"), "threads": metrics.get("torch_threads"),
            "train_minutes": round(seconds / 60) if seconds else None,
            "encoder_layers": range(config.get("n_encoder_layers", 0)),
            "decoder_layers": range(config.get("n_decoder_layers", 0)), "heads": range(config.get("n_heads", 0)),
            "diagram": diagram(config), "norms": norm_names(config),
            "paper_matrix": content.count_text(content.PAPER_VOCAB * content.PAPER["d_model"]),
            "parameters": content.count_text(content.parameter_count(config)) if config else None,
            "parameter_rows": content.parameter_rows(
                [(m.name, m.config) for m in TrainedModel.objects.filter(shipped=True).order_by("name")])}


def _pages() -> list[tuple[str, str, str]]:
    return [(p, str(content.PAGE_TITLES[p]), reverse(f"lesson:{TEMPLATES[p]}")) for p in content.PAGES]


def _page(request: HttpRequest, page: str, **extra: Any) -> HttpResponse:
    progress_visit(user=request.user, page=page)
    return render(request, f"lesson/{content.lang()}/{TEMPLATES[page]}.html", _page_context(request, page, **extra))


def _page_context(request: HttpRequest, page: str, **extra: Any) -> dict[str, Any]:
    return {
        "page": page, "pages": _pages(),
        "title": str(content.PAGE_TITLES[page]), "errata": content.errata(page),
        "exercises": content.exercises(page, progress_revealed(user=request.user, page=page)),
        "models": models_visible_to(request.user).filter(task="zh-en"), "default_model": DEFAULT_MODEL,
        "default_sentence": DEFAULT_SENTENCE, "demo_max_chars": DEMO_MAX_CHARS, "model_card": _model_card(request), "paper": content.PAPER, **extra,
    }


# What each page's view adds to the shared context (the figures some pages draw).
PAGE_EXTRAS = {
    "decoder": lambda: {"run": training_latest(kind="mask")},
    "questions": lambda: {"run": training_latest(kind="ffn"), "figures": {"masks": masks_figure(7)},
                          "stacks": {"stacks": stacks_figure(4, 3)}},
    "glossary": lambda: {"terms": content.glossary()},
}


@signed_in
def part(request: HttpRequest, page: str, part: str = "") -> HttpResponse:
    """One part of a lesson page, as a live session's screens show it (webapp/lesson/parts.py): the same for every
    reader of a language, rendered once a minute however many screens ask; no visit is recorded (the page's is)."""
    if lesson_part(page, part) is None:
        raise Http404("no such part of the lesson")

    def render_page() -> str:
        extra = PAGE_EXTRAS.get(page, dict)()
        context = _page_context(request, page, **extra)
        return render(request, f"lesson/{content.lang()}/{TEMPLATES[page]}.html", context).content.decode()

    return HttpResponse(part_html(page, part, render_page))


@signed_in
def overview(request: HttpRequest) -> HttpResponse:
    return _page(request, "overview")


@signed_in
def encoder(request: HttpRequest) -> HttpResponse:
    return _page(request, "encoder")


@signed_in
def decoder(request: HttpRequest) -> HttpResponse:
    return _page(request, "decoder", **PAGE_EXTRAS["decoder"]())


@signed_in
def residual_norm(request: HttpRequest) -> HttpResponse:
    return _page(request, "residual-norm")


@signed_in
def questions(request: HttpRequest) -> HttpResponse:
    return _page(request, "questions", **PAGE_EXTRAS["questions"]())


@signed_in
def glossary(request: HttpRequest) -> HttpResponse:
    return _page(request, "glossary", **PAGE_EXTRAS["glossary"]())


@signed_in
@require_POST
def demo(request: HttpRequest, kind: str) -> HttpResponse:
    """Run one demonstration (or answer it from the cache) and return its figures; bad input gets a message."""
    try:
        answer = demo_run(user=request.user, kind=kind, model_name=request.POST.get("model"), raw=request.POST.dict())
    except DemoRefused as refused:
        context = {"code": refused.code, "message": str(refused), "retry_after": refused.retry_after,
                   "max_chars": DEMO_MAX_CHARS}
        status = 200 if request.htmx else 429 if refused.code == "rate_limited" else 422
        response = render(request, "lesson/partials/demo_error.html", context, status=status)
        if refused.retry_after is not None:
            response["Retry-After"] = str(refused.retry_after)
        return response
    context = {"kind": kind, "result": answer.result, "cached": answer.cached,
               "figures": figures_for(kind, answer.result)}
    return render(request, f"lesson/partials/demo_{kind}.html", context)


@signed_in
@require_POST
def train(request: HttpRequest, kind: str) -> HttpResponse:
    """Start (or find) a tiny training comparison and return its panel, which polls until it is done."""
    try:
        run = training_request(user=request.user, kind=kind)
    except DemoRefused:
        raise Http404("no such training comparison") from None
    return _run_panel(request, run)


@signed_in
def run_status(request: HttpRequest, run_id: int) -> HttpResponse:
    return _run_panel(request, get_object_or_404(TrainingRun, pk=run_id))


@signed_in
def run_queue(request: HttpRequest, run_id: int) -> HttpResponse:
    """A queued run's place and wait on the experiments' queue, now (its panel polls it); nothing once it left."""
    run = get_object_or_404(TrainingRun, pk=run_id)
    return render(request, "experiments/partials/queue.html", _queue_context(run))


def _queue_context(run: TrainingRun) -> dict[str, Any]:
    return {"run": run, "queue": training_queue_place(run=run), "queue_url": reverse("lesson:run_queue", args=[run.pk])}


def _run_panel(request: HttpRequest, run: TrainingRun) -> HttpResponse:
    done = run.status == TrainingRun.Status.SUCCEEDED
    figures = figures_for(run.kind, run.result) if done else {}
    waiting = run.status == TrainingRun.Status.QUEUED and workers_present("experiments") is False
    arms = [{**arm, "shown": arm_label(arm["label"])} for arm in run.result["arms"]] if done else []
    context = {"figures": figures, "no_worker": waiting, "arms": arms, "arm_names": json.dumps(arm_names(run.kind), ensure_ascii=False),
               **_queue_context(run)}
    return render(request, "lesson/partials/run.html", context)


@signed_in
@require_POST
def reveal(request: HttpRequest, exercise_id: str) -> HttpResponse:
    """Show an exercise's answer and note it in the student's progress."""
    page = progress_reveal(user=request.user, exercise_id=exercise_id)
    if page is None:
        raise Http404("no such exercise")
    if not request.htmx:
        return redirect(f"lesson:{TEMPLATES[page]}")
    item = next(e for e in content.exercises(page, [exercise_id]) if e["id"] == exercise_id)
    return render(request, "lesson/partials/exercise.html", {"exercise": item})


@instructors_only
def progress(request: HttpRequest) -> HttpResponse:
    """Each student's progress through the lesson's pages: an instructor's own students, or all of them."""
    students, by_class = lesson_students(viewer=request.user)
    return render(request, "lesson/progress.html", {"rows": progress_table(students=students), "pages": _pages(),
                                                    "by_class": by_class})
