"""Celery tasks of the experiments (routed to the `experiments` queue by name)."""
from __future__ import annotations

from django.conf import settings

from modelcore.experiments import torch_threads
from webapp.celery import TrainingTask, app
from webapp.experiments.services import RUN_TASK, RUNS, experiment_run_execute
from webapp.experiments.sweep_parts import PART_TASK, sweep_part_execute


@app.task(name=RUN_TASK, base=TrainingTask)
def run_experiment_task(run_id: int) -> None:
    """Run one queued ExperimentRun to the end (progress goes to its sockets)."""
    # Probe models are small and workers share machines: one thread unless the operator says otherwise.
    with torch_threads(settings.EXPERIMENTS_TORCH_THREADS):
        experiment_run_execute(run_id=run_id)


@app.task(name=PART_TASK, base=TrainingTask)
def sweep_part_task(run_id: int, index: int) -> None:
    """One part of a sweep split across the experiments workers, unless another worker has it already."""
    with torch_threads(settings.EXPERIMENTS_TORCH_THREADS):
        sweep_part_execute(run_id=run_id, index=index)


# A Redis that restarts empty loses the queued runs' messages: each reconnect sends them again.
RUNS.resend_on_connect()
