"""What a screen shows of a lesson step (the part, the demonstration's figures, a comparison's curves), sent in the
step's frame itself as `html` in the screen's language: each web process renders it once per language and writes the
same text to each of its sockets, instead of every screen asking for it over HTTP (docs/benchmarks.md)."""
from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils import translation

from webapp.classroom.models import LiveSession, Question
from webapp.classroom.steps.comparisons import class_result
from webapp.experiments import figures as experiment_figures
from webapp.experiments.models import ExperimentRun
from webapp.lesson.models import TrainingRun
from webapp.lesson.screens import demo_text, part_text, run_panel_text

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
    if kind in ("reveal", "seed_added") and frame.get("experiment"):  # with the seeds the class added, if any
        experiment = frame["experiment"]
        return ("run", experiment["source"], experiment["run"], frame["question"], experiment.get("added", 0), language)
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
            text = experiment_result_text(ExperimentRun.objects.get(pk=key[2]), question_id=key[3] if key[4] else None)
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


def experiment_result_text(run: ExperimentRun, question_id: int | None = None) -> str:
    """An experiments page comparison's figures (and a sweep's verdict), as its run page draws them, in the active
    language; with `question_id`, that question's sweep with the seeds its students added (comparisons.class_result)."""
    done = run.status == ExperimentRun.Status.SUCCEEDED
    result = run.result
    if done and question_id is not None:
        result = class_result(Question.objects.get(pk=question_id), run)[0]
    context = {"run": run, **(experiment_figures.result_context(run.kind, result) if done else {})}
    return render_to_string("experiments/partials/result.html", context)
