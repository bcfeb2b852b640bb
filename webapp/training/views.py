"""The /training/ pages (admins only): the job list, the job form, one job live, corpus uploads."""
from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from modelcore.tasks import CorpusError
from webapp.accounts.permissions import admins_only
from webapp.training.datasets import corpus_problems, dataset_upload
from webapp.training.forms import DatasetForm, JobForm
from webapp.training.models import Dataset, TrainingJob
from webapp.training.services import (
    job_cancel,
    job_checkpoint,
    job_create,
    job_keep_checkpoint,
    job_retry,
    job_snapshot,
    jobs_with_positions,
)


def _list_context() -> dict[str, object]:
    jobs = jobs_with_positions()
    return {"jobs": jobs, "any_active": any(job.status in TrainingJob.ACTIVE for job in jobs)}


@admins_only
def job_list(request: HttpRequest) -> HttpResponse:
    """Every job with its queue position, status and progress."""
    return render(request, "training/list.html", _list_context())


@admins_only
def job_rows(request: HttpRequest) -> HttpResponse:
    """The job table alone, polled by htmx while any job is queued or running."""
    return render(request, "training/partials/job_table.html", _list_context())


@admins_only
def job_new(request: HttpRequest) -> HttpResponse:
    """The form to queue a job; a mistake is shown beside its field."""
    form = JobForm(request.POST or None, initial={"task": request.GET.get("task", ""),
                                                  "dataset": request.GET.get("dataset")})
    if request.method == "POST" and form.is_valid():
        job = job_create(owner=request.user, config=form.train_config(), task=form.cleaned_data["task"],
                         dataset=form.cleaned_data["dataset"])
        messages.success(request, _("Job %(id)s is queued.") % {"id": job.pk})
        return redirect("training:job", job_id=job.pk)
    return render(request, "training/new.html", {"form": form}, status=400 if form.errors else 200)


@admins_only
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    """One job: live progress, loss and metric curves, the log tail, Cancel and Retry."""
    job = get_object_or_404(TrainingJob.objects.select_related("dataset", "model", "owner"), pk=job_id)
    labels = {value: str(label) for value, label in TrainingJob.Status.choices}
    saved = job_checkpoint(job=job) if job.is_final else None  # what Retry resumes from, when there is one
    context = {"job": job, "snapshot": job_snapshot(job), "status_labels": labels,
               "checkpoint": saved if job.model_id is None else None, "resume_step": saved.step if saved else None}
    return render(request, "training/job.html", context)


@admins_only
def job_cancel_view(request: HttpRequest, job_id: int) -> HttpResponse:
    """GET asks first (and offers to keep the last checkpoint as a model); POST cancels."""
    job = get_object_or_404(TrainingJob, pk=job_id)
    if request.method != "POST":
        if job.is_final:
            return redirect("training:job", job_id=job.pk)
        return render(request, "training/cancel.html", {"job": job, "checkpoint": job_checkpoint(job=job)})
    if request.POST.get("keep") and job_checkpoint(job=job) is not None:
        model = job_keep_checkpoint(job=job)  # before the run stops: what it saves on the way out is not kept
        messages.success(request, _("The last checkpoint is kept as the model %(name)s.") % {"name": model.name})
    job = job_cancel(job=job)
    if job.status == TrainingJob.Status.RUNNING:
        messages.info(request, _("Cancelling: the run stops at its next step."))
    return redirect("training:job", job_id=job.pk)


@admins_only
@require_POST
def job_keep_view(request: HttpRequest, job_id: int) -> HttpResponse:
    """Keep a cancelled or failed job's last checkpoint as an unpublished model."""
    job = get_object_or_404(TrainingJob, pk=job_id)
    try:
        model = job_keep_checkpoint(job=job)
    except ValueError:
        messages.error(request, _("This job left no checkpoint to keep."))
    else:
        messages.success(request, _("The last checkpoint is kept as the model %(name)s.") % {"name": model.name})
    return redirect("training:job", job_id=job.pk)


@admins_only
@require_POST
def job_retry_view(request: HttpRequest, job_id: int) -> HttpResponse:
    try:
        job_retry(job=get_object_or_404(TrainingJob, pk=job_id))
    except ValueError as exc:
        messages.error(request, str(exc))
    return redirect("training:job", job_id=job_id)


@admins_only
def dataset_list(request: HttpRequest) -> HttpResponse:
    """Uploaded corpora, and the upload form; a malformed file is refused with the lines at fault."""
    form = DatasetForm(request.POST or None, request.FILES or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                dataset = dataset_upload(name=form.cleaned_data["name"], filename=upload.name, data=upload.read(),
                                         owner=request.user)
            except CorpusError as exc:
                for problem in corpus_problems(exc):
                    form.add_error("file", problem)
            else:
                messages.success(request, _("Corpus %(name)s stored: %(n)s pairs.")
                                 % {"name": dataset.name, "n": dataset.n_pairs})
                return redirect("training:datasets")
        status = 400
    context = {"form": form, "datasets": Dataset.objects.all(), "upload_limit": settings.TRAINING_UPLOAD_MAX_BYTES}
    return render(request, "training/datasets.html", context, status=status)
