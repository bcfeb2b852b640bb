"""Celery side of training jobs: the task, and what a training worker does when it starts and stops."""
from __future__ import annotations

import logging
import threading
from typing import Any

from celery.signals import worker_shutting_down
from django.db import connection

from webapp.celery import TrainingTask, app
from webapp.ops.broker import on_every_connect
from webapp.training.dispatch import RUN_JOB
from webapp.training.runner import job_run
from webapp.training.services import jobs_preempt, jobs_recover

log = logging.getLogger(__name__)
QUEUE = "training"


@app.task(name=RUN_JOB, base=TrainingTask, bind=True)
def run_job(self: Any, job_id: int, seen_lease: str | None = None) -> str:
    """Run or resume one training job (acknowledged only when it ends; re-queued if the worker dies)."""
    return job_run(job_id=job_id, seen_lease=seen_lease, worker=self.request.hostname or "")


# At a worker's start: jobs whose message died with a worker (a crash, a deploy). After a reconnect: jobs
# whose message died with Redis (one that restarts empty loses the queue; a queued job would wait for
# ever). A duplicate costs a message, never a run: the lease lets one delivery run a job.
on_every_connect(app, QUEUE, jobs_recover, "send unfinished training jobs again")


@worker_shutting_down.connect
def checkpoint_running_jobs(sender: str = "", how: str = "", **_: Any) -> None:
    """On a warm shutdown, runs on this worker checkpoint and queue themselves again."""
    # This runs inside a signal handler: touch the database from a fresh thread, never through the
    # connection of the code it interrupted.
    if how != "Warm":
        return

    def flag() -> None:
        try:
            count = jobs_preempt(worker=sender)
            if count:
                log.info("asked %d training runs on %s to checkpoint and requeue", count, sender)
        finally:
            connection.close()

    # A daemon: one still waiting for the database when the wait below ends must not keep the process alive.
    thread = threading.Thread(target=flag, name="training-preempt", daemon=True)
    thread.start()
    thread.join(10)
