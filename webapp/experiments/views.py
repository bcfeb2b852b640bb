"""Experiment pages: three figure pages, the index with the launch form, and one page per run."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from webapp.accounts.permissions import signed_in
from webapp.accounts.roles import Role, has_role
from webapp.experiments import figures
from webapp.experiments.forms import ADMIN_LIMITS, STUDENT_LIMITS, LaunchForm, Limits
from webapp.experiments.models import ExperimentRun
from webapp.experiments.services import (
    QuotaExceeded,
    experiment_page_results,
    experiment_queue_place,
    experiment_quota_left,
    experiment_run_request,
    experiment_sweep_kept,
)
from webapp.ops.sealed import is_sealed


def _limits(request: HttpRequest) -> Limits:
    return ADMIN_LIMITS if has_role(request.user, Role.ADMIN) else STUDENT_LIMITS


def _form_context(request: HttpRequest, form: LaunchForm, quota_error: str = "") -> dict[str, object]:
    return {"form": form, "quota_left": experiment_quota_left(user=request.user), "quota_error": quota_error,
            "limits": form.limits}


@signed_in
def index(request: HttpRequest) -> HttpResponse:
    """The three experiments, the launch form and this user's recent runs."""
    runs = ExperimentRun.objects.filter(owner=request.user)[:10]
    context = _form_context(request, LaunchForm(limits=_limits(request)))
    return render(request, "experiments/index.html", {**context, "runs": runs})


SWEPT = {"norm-position": ("norm_position", "warmup"), "residuals": ("residual",)}  # a page's one-seed comparisons


def _figure_page(request: HttpRequest, page: str, build: Callable[[dict[str, Any]], dict[str, Any]], template: str) -> HttpResponse:
    results = experiment_page_results(page=page)
    over = {name: figures.over_seeds(experiment_sweep_kept(comparison=name)) for name in SWEPT.get(page, ())}
    return render(request, template, {"figures": build(results), "missing": [k for k, v in results.items() if not v],
                                      "over_seeds": over})



@signed_in
def norm_position(request: HttpRequest) -> HttpResponse:
    """Post-LN against Pre-LN: gradients at init, loss curves, gradient heatmaps, warmup."""
    return _figure_page(request, "norm-position", figures.norm_position_figures, "experiments/norm_position.html")


@signed_in
def residuals(request: HttpRequest) -> HttpResponse:
    """With and without residuals: gradients at depths 6, 12, 24, representation drift, loss curves."""
    return _figure_page(request, "residuals", figures.residual_figures, "experiments/residuals.html")


@signed_in
def layernorm(request: HttpRequest) -> HttpResponse:
    """What a norm does to each position; LayerNorm against RMSNorm."""
    return _figure_page(request, "layernorm", figures.layernorm_figures, "experiments/layernorm.html")


@signed_in
@require_POST
def launch(request: HttpRequest) -> HttpResponse:
    """Validate, then answer the run panel (htmx) or redirect to the run (plain form post)."""
    form = LaunchForm(request.POST, limits=_limits(request))
    if not form.is_valid():
        return _form_again(request, form, "", status=422)
    kind, params = form.experiment_request()
    try:
        requested = experiment_run_request(user=request.user, kind=kind, params=params)
    except QuotaExceeded as error:
        return _form_again(request, form, str(error), status=429)
    if not request.htmx:
        return redirect("experiments:run", run_id=requested.run.pk)
    context = {"run": requested.run, "created": requested.created, "queue": experiment_queue_place(run=requested.run)}
    return render(request, "experiments/partials/run.html", context)


def _form_again(request: HttpRequest, form: LaunchForm, quota_error: str, *, status: int) -> HttpResponse:
    # htmx swaps only 2xx answers by default; a plain form post gets the telling status code.
    context = _form_context(request, form, quota_error)
    return render(request, "experiments/partials/form.html", context, status=200 if request.htmx else status)


@signed_in
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    """One run: its parameters, a live progress bar, its figures once done."""
    run = get_object_or_404(ExperimentRun, pk=run_id)
    if is_sealed(run):
        return render(request, "experiments/sealed.html", {"run": run})
    return render(request, "experiments/run.html", {"run": run, "queue": experiment_queue_place(run=run)})


@signed_in
def run_queue(request: HttpRequest, run_id: int) -> HttpResponse:
    """A queued run's place and wait, now (the run panel polls it); nothing once the run has left the queue."""
    run = get_object_or_404(ExperimentRun, pk=run_id)
    return render(request, "experiments/partials/queue.html", {"run": run, "queue": experiment_queue_place(run=run)})


@signed_in
def run_result(request: HttpRequest, run_id: int) -> HttpResponse:
    """The figures fragment of a run (what the page swaps in when the socket says it is done)."""
    run = get_object_or_404(ExperimentRun, pk=run_id)
    if is_sealed(run):
        return render(request, "experiments/partials/sealed.html", {"run": run})
    done = run.status == ExperimentRun.Status.SUCCEEDED
    return render(request, "experiments/partials/result.html",
                  {"run": run, **(figures.result_context(run.kind, run.result) if done else {})})
