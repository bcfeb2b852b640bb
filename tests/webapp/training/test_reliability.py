"""Jobs on real Celery worker processes and Redis: a run to the registry, SIGKILL, deploys, cancel.

The kill tests compare the final weights with a run in this process that was never interrupted: a job
resumed from its checkpoint must end bit for bit where the uninterrupted run ends.
"""
from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.fixtures.training import TINY_TASK_OPTIONS, tiny_config
from webapp.registry.models import TrainedModel
from webapp.training.models import TrainingJob
from webapp.training.services import job_cancel, job_create

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
Status = TrainingJob.Status

# 600 steps with a checkpoint every 10: long enough that a stop lands mid-run (the test sees the
# step only as the heartbeat saves it, and the run reads a preempt flag only at its next beat: up to
# 2 x 0.75 s late, about 150 steps on a fast day; with 150 steps in all, the run once finished first),
# short enough for a test (the uninterrupted reference trains in about 6 s).
KILL_CONFIG = tiny_config(steps=600, checkpoint_every=10)


def worker_env(store: Path) -> dict[str, str]:
    # One thread (several agents share this CPU) and a 3 s lease, so a dead run's job is taken over quickly.
    return {"MODEL_STORE": str(store), "TRAINING_LEASE_SECONDS": "3", "OMP_NUM_THREADS": "1",
            "MODELCORE_DEVICE": "cpu"}


def wait_for(job: TrainingJob, check: Callable[[TrainingJob], bool], what: str, timeout: float = 120) -> TrainingJob:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if check(job):
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job.pk} never {what}: {job.status} at step {job.step}\n{job.log}")


def pool_children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(child) for child in f.read().split()]


@pytest.fixture(scope="module")
def reference_weights(tmp_path_factory) -> dict[str, torch.Tensor]:
    """The final weights of KILL_CONFIG trained here, start to end, on one thread like the workers."""
    from modelcore.tasks import get_task
    from modelcore.training import TrainConfig, train

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        folder = tmp_path_factory.mktemp("reference")
        train(get_task("reverse", seed=0, **TINY_TASK_OPTIONS), folder, TrainConfig(**KILL_CONFIG, device="cpu"))
    finally:
        torch.set_num_threads(threads)
    return load_file(str(folder / "model.safetensors"))


def assert_same_weights(job: TrainingJob, reference: dict[str, torch.Tensor]) -> None:
    weights = load_file(str(job.folder / "model.safetensors"))
    assert weights.keys() == reference.keys()
    differing = [name for name in weights if not torch.equal(weights[name], reference[name])]
    assert not differing, f"{len(differing)} tensors differ from the uninterrupted run, e.g. {differing[:3]}"


def queue_kill_job(admin) -> TrainingJob:
    return job_create(owner=admin, config=KILL_CONFIG, task="reverse", task_options=TINY_TASK_OPTIONS)


def test_a_queued_job_runs_on_a_worker_and_its_model_is_registered(admin, store, start_worker, empty_training_queue):
    start_worker("training", env=worker_env(store))
    job = job_create(owner=admin, config=tiny_config(steps=40), task="copy", task_options=TINY_TASK_OPTIONS)
    job = wait_for(job, lambda j: j.is_final, "finished")
    assert job.status == Status.SUCCEEDED, job.log
    model = TrainedModel.objects.get(pk=job.model_id)
    assert (model.name, model.task, model.published) == (f"job-{job.pk}-copy", "copy", False)
    assert model.metrics["test"]["n"] == 40 and "bleu" in model.metrics["test"]
    assert model.config["d_model"] == 32 and model.config["norm_position"] == "pre"
    assert (Path(model.path) / "model.safetensors").is_file() and Path(model.path) == job.folder


def test_a_killed_pool_process_is_replaced_and_the_job_resumes_to_the_same_weights(
    admin, store, start_worker, empty_training_queue, reference_weights
):
    worker = start_worker("training", pool="prefork", env=worker_env(store))
    job = queue_kill_job(admin)
    wait_for(job, lambda j: j.step >= 25, "reached step 25")
    (child,) = pool_children(worker.proc.pid)
    os.kill(child, signal.SIGKILL)  # the main process sees its child die and puts the message back at once
    job = wait_for(job, lambda j: j.is_final, "finished")
    assert job.status == Status.SUCCEEDED, job.log
    assert job.attempts == 2
    assert job.resumed_from_step is not None and job.resumed_from_step >= 20 and job.resumed_from_step % 10 == 0
    assert f"resuming from the checkpoint at step {job.resumed_from_step}" in job.log
    assert_same_weights(job, reference_weights)


def test_a_killed_worker_s_job_resumes_on_the_next_worker_to_the_same_weights(
    admin, store, start_worker, empty_training_queue, reference_weights
):
    first = start_worker("training", env=worker_env(store))
    job = queue_kill_job(admin)
    wait_for(job, lambda j: j.step >= 25, "reached step 25")
    first.stop(signal.SIGKILL)  # the whole worker: its message stays unacknowledged in Redis
    killed_at = TrainingJob.objects.get(pk=job.pk).step
    start_worker("training", env=worker_env(store))  # on start it sends unfinished jobs again
    job = wait_for(job, lambda j: j.is_final, "finished")
    assert job.status == Status.SUCCEEDED, job.log
    assert job.attempts == 2 and job.resumed_from_step is not None and job.resumed_from_step <= killed_at + 10
    assert_same_weights(job, reference_weights)


def test_a_worker_shutting_down_checkpoints_and_requeues_its_job(
    admin, store, start_worker, empty_training_queue, reference_weights
):
    first = start_worker("training", pool="prefork", env=worker_env(store))  # as in docker/compose.yaml
    job = queue_kill_job(admin)
    wait_for(job, lambda j: j.step >= 25, "reached step 25")
    os.kill(first.proc.pid, signal.SIGTERM)  # a deploy: warm shutdown of the main process
    first.proc.wait(timeout=60)
    job = wait_for(job, lambda j: j.status == Status.QUEUED, "queued again", timeout=10)
    assert job.attempts == 0, "a shutdown is not one of the job's attempts"
    assert "worker shutting down: checkpoint at step" in job.log
    stopped_at = job.step

    start_worker("training", env=worker_env(store))
    job = wait_for(job, lambda j: j.is_final, "finished", timeout=300)  # a slow shared machine took over 120 s
    assert job.status == Status.SUCCEEDED, job.log
    assert job.resumed_from_step == stopped_at, "it lost no step: the checkpoint was written as it stopped"
    assert_same_weights(job, reference_weights)


def test_a_cancelled_run_stops_and_writes_no_checkpoint(admin, store, start_worker, empty_training_queue):
    # A checkpoint only every 1000 steps: any weights file in the folder would have been written by the cancel.
    config = tiny_config(steps=3000, checkpoint_every=1000)
    start_worker("training", env=worker_env(store))  # first: a solo worker busy with a job answers no ping
    job = job_create(owner=admin, config=config, task="reverse", task_options=TINY_TASK_OPTIONS)
    wait_for(job, lambda j: j.step >= 20, "reached step 20")
    job_cancel(job=job)
    job = wait_for(job, lambda j: j.is_final, "stopped", timeout=30)
    assert job.status == Status.CANCELLED and job.step < 1000
    assert f"cancelled at step {job.step}" in job.log
    time.sleep(1.0)  # absence: no weights file lands after the cancel
    assert sorted(p.name for p in job.folder.iterdir()) == ["job.json"]
    assert job.model is None and not TrainedModel.objects.exists()


def test_a_redis_restart_loses_no_job_the_running_one_finishes_and_the_queued_one_runs(
    admin, store, start_worker, empty_training_queue, tmp_path
):
    """Redis killed and started again empty under a running job and a queued one (a Redis of the test's own).

    The queued job's message dies with Redis: the worker sends unfinished jobs again once it has
    reconnected, so it runs without anyone restarting the worker.
    """
    from scripts.redis_embedded import EmbeddedRedis

    server = EmbeddedRedis(tmp_path / "own-redis")
    server.start()
    try:
        running = job_create(owner=admin, config=tiny_config(steps=300, checkpoint_every=50), task="reverse",
                             task_options=TINY_TASK_OPTIONS)
        queued = job_create(owner=admin, config=tiny_config(steps=40), task="copy", task_options=TINY_TASK_OPTIONS)
        # Their messages went to the suite's Redis, which no worker of this test reads: this worker,
        # on its own Redis, gets them from its start's recovery, oldest first.
        # Prefork, as deployed: the main process keeps its broker connection while the pool process trains.
        start_worker("training", redis_url=server.url, pool="prefork", env=worker_env(store))
        wait_for(running, lambda j: j.status == Status.RUNNING and j.step > 0, "started")
        queued.refresh_from_db()
        assert queued.status == Status.QUEUED
        assert server.proc is not None
        server.proc.kill()
        server.proc.wait()
        time.sleep(1)  # absence: Redis is away under the running job
        server.start()  # empty: the queued job's message is gone
        running = wait_for(running, lambda j: j.is_final, "finished")
        assert running.status == Status.SUCCEEDED and running.step == 300, running.log
        queued = wait_for(queued, lambda j: j.is_final, "finished after the restart")
        assert queued.status == Status.SUCCEEDED, queued.log
        assert queued.attempts == 1 and running.attempts == 1  # each ran once: the duplicates were dropped
    finally:
        server.stop()
