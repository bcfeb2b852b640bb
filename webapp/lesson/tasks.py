"""Celery tasks of the lesson: demonstrations (interactive queue) and tiny training comparisons (experiments)."""
from __future__ import annotations

from typing import Any

from django.conf import settings

from modelcore.experiments import torch_threads
from webapp.celery import TrainingTask, app
from webapp.lesson.services import DEMO_TASK, TRAIN_TASK, demo_compute, training_execute


@app.task(name=DEMO_TASK)
def demo_task(job: dict[str, Any]) -> dict[str, Any]:
    """One demonstration on a warm model: {"result": ...} or {"error": {"code", "message"}}."""
    return demo_compute(job=job)


@app.task(name=TRAIN_TASK, base=TrainingTask)
def train_task(run_id: int) -> None:
    """One training comparison to the end; progress goes to its row."""
    with torch_threads(settings.EXPERIMENTS_TORCH_THREADS):
        training_execute(run_id=run_id)
