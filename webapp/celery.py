"""The Celery app: JSON only, prefetch 1, queues `interactive` (decoding) and `training` (long jobs)."""
from __future__ import annotations

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings.dev")

app = Celery("webapp")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("interactive"), Queue("training"))
app.conf.task_routes = {
    "webapp.training.*": {"queue": "training"},
    "webapp.experiments.*": {"queue": "training"},
}
app.autodiscover_tasks()


@app.task(name="webapp.core.ping", queue="interactive")
def ping() -> str:
    """Answer 'pong': proves a worker consumes the queue it was sent to."""
    return "pong"
