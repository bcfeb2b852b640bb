"""The lesson's pages, its demonstrations (htmx fragments), exercises and the instructors' progress table."""
from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from webapp.accounts.permissions import instructors_only, signed_in
from webapp.lesson import content
from webapp.lesson.models import TrainingRun
from webapp.lesson.parts import TEMPLATES, lesson_part
from webapp.lesson.screens import (
    PAGE_EXTRAS,
    demo_context,
    page_context,
    pages,
    part_text,
    queue_context,
    run_panel_context,
)
from webapp.lesson.services import (
    DEMO_MAX_CHARS,
    DemoRefused,
    demo_run,
    lesson_students,
    progress_reveal,
    progress_table,
    progress_visit,
    training_request,
)
from webapp.realtime.hold import note_refused


def _page(request: HttpRequest, page: str, **extra: Any) -> HttpResponse:
    progress_visit(user=request.user, page=page)
    return render(request, f"lesson/{content.lang()}/{TEMPLATES[page]}.html",
                  page_context(request.user, page, **extra))


@signed_in
def part(request: HttpRequest, page: str, part: str = "") -> HttpResponse:
    """One part of a lesson page, as a live session's screens show it (screens.part_text): the same for every
    reader of a language, rendered once a minute however many ask; no visit is recorded (the page's is)."""
    if lesson_part(page, part) is None:
        raise Http404("no such part of the lesson")
    return HttpResponse(part_text(page, part, request.user))


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
            if refused.code == "rate_limited":  # its next demonstration waits this out before Django sees it
                note_refused(request.session.session_key, request.path.removesuffix(f"{kind}/"), refused.retry_after)
        return response
    return render(request, f"lesson/partials/demo_{kind}.html", demo_context(kind, answer.result, answer.cached))


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
    return render(request, "experiments/partials/queue.html", queue_context(run))


def _run_panel(request: HttpRequest, run: TrainingRun) -> HttpResponse:
    return render(request, "lesson/partials/run.html", run_panel_context(run))


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
    return render(request, "lesson/progress.html", {"rows": progress_table(students=students), "pages": pages(),
                                                    "by_class": by_class})
