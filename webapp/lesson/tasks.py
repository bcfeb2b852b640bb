"""Celery tasks of the lesson: demonstrations (interactive queue) and tiny training comparisons (experiments)."""
from __future__ import annotations

import functools
from typing import Any

from django.conf import settings

from modelcore.experiments import torch_threads
from webapp.celery import TrainingTask, app
from webapp.lesson.services import (
    DEMO_TASK,
    DEMO_WAIT_S,
    RUNS,
    TRAIN_TASK,
    demo_compute,
    demo_worker_key,
    training_execute,
)
from webapp.ops.redis_client import app_redis


@app.task(name=DEMO_TASK, bind=True)
def demo_task(self: Any, job: dict[str, Any]) -> dict[str, Any]:
    """One demonstration on a warm model (queue `demonstrations`): {"result": ...} or {"error": {"code", "message"}}.
    It names its worker first, so the request waiting for it sees the worker die (services._demo_answer)."""
    app_redis().set(demo_worker_key(self.request.id), self.request.hostname, ex=int(DEMO_WAIT_S) + 5)
    _torch_threads_once()
    return demo_compute(job=job)


@functools.lru_cache(maxsize=1)
def _torch_threads_once() -> None:
    """Each demonstration single-threaded by default: the worker's pool threads run several side by side, and
    OpenMP threads spinning beside them would take the cores decoding needs."""
    import torch

    torch.set_num_threads(settings.LESSON_DEMO_TORCH_THREADS)


@app.task(name=TRAIN_TASK, base=TrainingTask)
def train_task(run_id: int) -> None:
    """One training comparison to the end; progress goes to its row."""
    with torch_threads(settings.EXPERIMENTS_TORCH_THREADS):
        training_execute(run_id=run_id)


# A Redis that restarts empty loses the queued comparisons' messages, as the experiments' runs: send them again.
RUNS.resend_on_connect()
