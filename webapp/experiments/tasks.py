"""Celery tasks of the experiments (routed to the `training` queue by name)."""
from __future__ import annotations

import torch

from webapp.celery import TrainingTask, app
from webapp.experiments.services import experiment_run_execute

# Several workers may share a machine; two threads each keeps them from starving one another.
TORCH_THREADS = 2


@app.task(name="webapp.experiments.run", base=TrainingTask)
def run_experiment_task(run_id: int) -> None:
    """Run one queued ExperimentRun to the end (progress goes to its sockets)."""
    torch.set_num_threads(min(TORCH_THREADS, torch.get_num_threads()))
    experiment_run_execute(run_id=run_id)
