"""Celery side of training jobs: the task, and what a training worker does when it starts and stops."""
from __future__ import annotations

import logging
import threading
from typing import Any

from celery import bootsteps
from celery.signals import worker_shutting_down
from django.db import connection

from webapp.celery import TrainingTask, app
from webapp.training.dispatch import RUN_JOB
from webapp.training.runner import job_run
from webapp.training.services import jobs_preempt, jobs_recover

log = logging.getLogger(__name__)
QUEUE = "training"


@app.task(name=RUN_JOB, base=TrainingTask, bind=True)
def run_job(self: Any, job_id: int, seen_lease: str | None = None) -> str:
    """Run or resume one training job (acknowledged only when it ends; re-queued if the worker dies)."""
    return job_run(job_id=job_id, seen_lease=seen_lease, worker=self.request.hostname or "")


def _consumes_training(consumer: Any) -> bool:
    queues = getattr(getattr(consumer, "task_consumer", None), "queues", None) or []
    return any(getattr(queue, "name", None) == QUEUE for queue in queues)


class RecoverJobsOnConnect(bootsteps.StartStopStep):
    """Each time a training worker's consumer connects to the broker, unfinished jobs are sent again.

    At the worker's start that picks up jobs whose message died with a worker (a crash, a deploy);
    after a reconnect, jobs whose message died with Redis: a Redis that restarts empty loses the
    queue, and a queued job would wait for ever. It runs once the consumer has declared its queues
    (an exchange with no queue bound drops what it is sent). A duplicate costs a message, never a
    run: the lease lets one delivery run a job (webapp/training/lease.py).
    """

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def start(self, c: Any) -> None:
        if not _consumes_training(c):
            return
        try:
            jobs_recover()
        except Exception:  # the database away too: the next connect (or start) tries again
            log.exception("could not send unfinished training jobs again")
        finally:
            connection.close()


app.steps["consumer"].add(RecoverJobsOnConnect)


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

    thread = threading.Thread(target=flag, name="training-preempt")
    thread.start()
    thread.join(10)
