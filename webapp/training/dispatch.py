"""Putting a training job on the `training` queue: by the task's name, once the rows that queued it are committed."""
from __future__ import annotations

from webapp.ops.runs import task_send_on_commit
from webapp.training.models import TrainingJob

RUN_JOB = "webapp.training.run_job"  # webapp.training.tasks.run_job; routed to `training` by its name


def job_dispatch(*, job: TrainingJob, countdown: float | None = None, seen_lease: str | None = None) -> None:
    """Send the job's message when the current transaction commits (at once outside one); notes its task id."""
    job_id = job.pk
    task_send_on_commit(RUN_JOB, [job_id], countdown=countdown, kwargs={"seen_lease": seen_lease} if seen_lease else {},
                        sent=lambda result: TrainingJob.objects.filter(id=job_id).update(celery_id=result.id))
