"""Queueing, cancelling, retrying and recovering training jobs (the web side and the workers' start/stop)."""
from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone

from modelcore.folder import CONFIG_FILE, METRICS_FILE, TOKENIZER_FILE, WEIGHTS_FILE
from webapp.registry.models import TrainedModel
from webapp.registry.services import model_register_folder
from webapp.training.dispatch import job_dispatch
from webapp.training.feed import job_announce
from webapp.training.models import Dataset, TrainingJob, log_line
from webapp.training.spec import job_model_name, job_model_title

log = logging.getLogger(__name__)
Status = TrainingJob.Status


def job_create(
    *, owner: Any, config: dict[str, Any], task: str = "", dataset: Dataset | None = None,
    task_options: dict[str, Any] | None = None,
) -> TrainingJob:
    """Save a job (config: train_config_dict's output) and put it on the `training` queue."""
    if bool(task) == (dataset is not None):
        raise ValueError("a job trains on exactly one of a task or a dataset")
    job = TrainingJob.objects.create(
        owner=owner, task=task, dataset=dataset, steps=config["steps"],
        config={"train": config, "task_options": task_options or {}},
    )
    job_dispatch(job=job)
    return job


def job_cancel(*, job: TrainingJob) -> TrainingJob:
    """Cancel: a queued job (or one whose worker is gone) at once; a running one at its next step."""
    now = timezone.now()
    reason = "cancelled by an admin before it started"
    if TrainingJob.objects.filter(id=job.pk, status=Status.QUEUED).update(
        status=Status.CANCELLED, finished_at=now, cancel_requested=True, log=log_line(reason)
    ):
        job_announce(job_id=job.pk, owner_id=job.owner_id, status=Status.CANCELLED)
    elif TrainingJob.objects.filter(id=job.pk, status=Status.RUNNING, lease_expires_at__lt=now).update(
        status=Status.CANCELLED, finished_at=now, cancel_requested=True, lease_owner="", lease_expires_at=None,
        log=log_line("cancelled by an admin while no worker was running it"),
    ):
        job_announce(job_id=job.pk, owner_id=job.owner_id, status=Status.CANCELLED)
    else:
        TrainingJob.objects.filter(id=job.pk, status=Status.RUNNING).update(cancel_requested=True)
    job.refresh_from_db()
    return job


@dataclass(frozen=True)
class Checkpoint:
    """The last checkpoint a job left in its folder: its step and the validation figures of that step or before."""

    step: int
    valid: dict[str, float]


def job_checkpoint(*, job: TrainingJob) -> Checkpoint | None:
    """The job's last checkpoint, if its folder holds a complete model (weights, config, tokenizer)."""
    folder = job.folder
    if not all((folder / name).is_file() for name in (WEIGHTS_FILE, CONFIG_FILE, TOKENIZER_FILE, METRICS_FILE)):
        return None
    try:
        step = int(json.loads((folder / METRICS_FILE).read_text(encoding="utf-8"))["step"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    evals = [e for e in job.evals if isinstance(e, dict) and e.get("step", step + 1) <= step]
    valid = {k: v for k, v in (evals[-1] if evals else {}).items() if k != "step" and isinstance(v, int | float)}
    return Checkpoint(step, valid)


def job_keep_checkpoint(*, job: TrainingJob) -> TrainedModel:
    """Copy the job's last checkpoint into a folder of its own and register it as an unpublished model.

    A copy, because the job's folder changes again if the job is retried; the job then names this model.
    """
    checkpoint = job_checkpoint(job=job)
    if checkpoint is None:
        raise ValueError(f"job {job.pk} has no checkpoint to keep")
    name = f"{job_model_name(job)}-step-{checkpoint.step}"[:100]
    target = Path(settings.MODEL_STORE) / "kept" / name
    if not (target / WEIGHTS_FILE).is_file():
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        for file in (CONFIG_FILE, TOKENIZER_FILE, METRICS_FILE, WEIGHTS_FILE):
            shutil.copy2(job.folder / file, partial / file)
        partial.rename(target)  # whole or not at all: a half-copied folder is never registered
    title = f"{job_model_title(job)}, checkpoint at step {checkpoint.step}"
    model = model_register_folder(folder=target, name=name, task=job.task or job.source_label, title=title,
                                  published=False, created_by=job.owner)
    TrainingJob.objects.filter(id=job.pk).update(model=model, log=log_line(f"checkpoint at step {checkpoint.step} kept as "
                                                                          f"model {name}"))
    job.refresh_from_db()
    return model


def job_retry(*, job: TrainingJob) -> TrainingJob:
    """Queue a failed or cancelled job again; it resumes from its last checkpoint, with fresh attempts."""
    if not TrainingJob.objects.filter(id=job.pk, status__in=(Status.FAILED, Status.CANCELLED)).update(
        status=Status.QUEUED, attempts=0, error="", cancel_requested=False, preempt_requested=False,
        finished_at=None, queued_at=timezone.now(), log=log_line("queued again by an admin"),
    ):
        raise ValueError(f"job {job.pk} is {job.status}: only failed or cancelled jobs can be retried")
    job.refresh_from_db()
    job_dispatch(job=job)
    job_announce(job_id=job.pk, owner_id=job.owner_id, status=Status.QUEUED)
    return job


def jobs_recover() -> int:
    """At a training worker's start: send every unfinished job again, in case its message died with a worker."""
    # A delivery for a job whose lease is live looks again once it could have lapsed; if the holder renewed it
    # meanwhile, the delivery was a duplicate and is dropped: sending too often costs a message, never a run.
    count = 0
    for job in TrainingJob.objects.filter(status__in=TrainingJob.ACTIVE).order_by("queued_at"):
        if job.status == Status.RUNNING and job.lease_expires_at is not None:
            countdown = max(0.0, (job.lease_expires_at - timezone.now()).total_seconds()) + 1.0
            job_dispatch(job=job, countdown=countdown, seen_lease=job.lease_expires_at.isoformat())
        else:
            job_dispatch(job=job)
        count += 1
    if count:
        log.info("re-sent %d unfinished training jobs", count)
    return count


def jobs_preempt(*, worker: str) -> int:
    """A worker is shutting down: ask its runs to checkpoint and queue themselves again.

    Reads first and writes only when the worker has runs: a worker with none (most of them) never waits for
    the database's write lock while it shuts down.
    """
    running = TrainingJob.objects.filter(status=Status.RUNNING, lease_owner__startswith=f"{worker}/")
    return running.update(preempt_requested=True) if running.exists() else 0


def jobs_active_count(owner: Any) -> int:
    """Queued and running jobs of one admin (the nav badge)."""
    return TrainingJob.objects.filter(owner=owner, status__in=TrainingJob.ACTIVE).count()


def jobs_with_positions() -> list[TrainingJob]:
    """Every job, newest first, each queued one with its `position` in the queue (1: next to run)."""
    jobs = list(TrainingJob.objects.select_related("owner", "dataset", "model").order_by("-created_at"))
    for job in jobs:
        job.position = None
    queued = sorted((j for j in jobs if j.status == Status.QUEUED), key=lambda j: (j.queued_at, j.pk))
    for position, job in enumerate(queued, start=1):
        job.position = position
    return jobs


def job_snapshot(job: TrainingJob) -> dict[str, Any]:
    """Everything a job page needs to draw itself; the socket's first frame."""
    return {
        "type": "snapshot", "job": job.pk, "status": job.status, "step": job.step, "steps": job.steps,
        "progress": job.progress, "history": job.history, "evals": job.evals, "log": job.log_tail(200),
        "error": job.error, "attempts": job.attempts, "model": job.model.name if job.model_id else None,
    }
