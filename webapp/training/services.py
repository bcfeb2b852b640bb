"""Queueing, cancelling, retrying and recovering training jobs (the web side and the workers' start/stop)."""
from __future__ import annotations

import logging
from typing import Any

from django.utils import timezone

from webapp.training.dispatch import job_dispatch
from webapp.training.live import job_announce
from webapp.training.models import Dataset, TrainingJob, log_line

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
    """A worker is shutting down: ask its runs to checkpoint and queue themselves again."""
    return TrainingJob.objects.filter(status=Status.RUNNING, lease_owner__startswith=f"{worker}/").update(
        preempt_requested=True
    )


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
