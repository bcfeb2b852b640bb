"""Putting a training job on the `training` queue: by the task's name, once the rows that queued it are committed."""
from __future__ import annotations

from django.db import transaction

from webapp.celery import app
from webapp.training.models import TrainingJob

RUN_JOB = "webapp.training.run_job"  # webapp.training.tasks.run_job; routed to `training` by its name


def job_dispatch(*, job: TrainingJob, countdown: float | None = None, seen_lease: str | None = None) -> None:
    """Send the job's message when the current transaction commits (at once outside one); notes its task id."""
    job_id = job.pk
    kwargs = {"seen_lease": seen_lease} if seen_lease else {}

    def send() -> None:
        result = app.send_task(RUN_JOB, args=[job_id], kwargs=kwargs, countdown=countdown)
        TrainingJob.objects.filter(id=job_id).update(celery_id=result.id)

    transaction.on_commit(send)
