"""The Celery app: JSON only, prefetch 1, queues `interactive` (decoding), `demonstrations` (the lesson's), `experiments`
(students' runs), `training`."""
from __future__ import annotations

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings.dev")

app = Celery("webapp")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("interactive"), Queue("demonstrations"), Queue("experiments"), Queue("training"))
# Experiment runs have their own queue and worker: a student's few-second run never waits behind a training job.
app.conf.task_routes = {
    "webapp.training.*": {"queue": "training"},
    "webapp.experiments.*": {"queue": "experiments"},
    "webapp.lesson.demo": {"queue": "demonstrations"},  # a flood of them never delays a decode
    "webapp.playground.*": {"queue": "interactive"},
}
app.autodiscover_tasks()


class TrainingTask(app.Task):
    """Base for long jobs (the `training` and `experiments` queues).

    Acknowledged only after it finishes and re-queued if its worker dies, so a job killed mid-run
    is delivered again (it resumes from its last checkpoint). The broker's visibility timeout
    (settings.CELERY_VISIBILITY_TIMEOUT) must exceed the longest job.
    """

    abstract = True
    acks_late = True
    reject_on_worker_lost = True
