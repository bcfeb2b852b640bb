"""A job run in this process, as a worker runs it: success, failures with their reasons, the lease rules."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
import torch
from django.utils import timezone

from tests.fixtures.training import TINY_TASK_OPTIONS, tiny_config
from webapp.registry.models import TrainedModel
from webapp.training.models import Dataset, TrainingJob
from webapp.training.runner import job_run

# The run's heartbeat thread has its own database connection: it must see committed rows.
pytestmark = [pytest.mark.django_db(transaction=True)]
Status = TrainingJob.Status


@pytest.fixture(autouse=True)
def one_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def make_job(owner, **config_overrides) -> TrainingJob:
    config = tiny_config(**config_overrides)
    return TrainingJob.objects.create(owner=owner, task="reverse", steps=config["steps"],
                                      config={"train": config, "task_options": TINY_TASK_OPTIONS})


def test_a_finished_job_becomes_a_hidden_model_with_its_metrics(admin, store):
    job = make_job(admin, steps=30)
    outcome = job_run(job_id=job.pk, worker="test")
    job.refresh_from_db()
    assert job.status == Status.SUCCEEDED, (outcome, job.log)
    assert (job.step, job.percent, job.attempts) == (30, 100, 1)
    model = TrainedModel.objects.get(name=f"job-{job.pk}-reverse")
    assert job.model == model and not model.published and model.created_by == admin
    assert model.metrics["test"]["n"] == 40 and 0 <= model.metrics["test"]["token_accuracy"] <= 1
    assert model.metrics["history"][-1]["step"] == 30, "the registry draws the training curve from it"
    assert job.result["test"] == model.metrics["test"]
    assert job.history[0]["step"] == 1 and job.history[-1]["step"] == 30
    assert "finished" in job.log and "attempt 1 of 3" in job.log
    assert sorted(p.name for p in job.folder.iterdir()) == [
        "config.json", "job.json", "metrics.json", "model.safetensors", "tokenizer.json"
    ], "the training state is dropped once the model is done"
    assert job.lease_owner == "" and job.lease_expires_at is None


def test_a_diverging_loss_fails_the_job_with_the_reason(admin, store):
    job = make_job(admin, schedule="constant", lr=1e4, norm_position="post", dropout=0.0, steps=40)
    job_run(job_id=job.pk, worker="test")
    job.refresh_from_db()
    assert job.status == Status.FAILED
    assert "TrainingDiverged: the loss became nan" in job.error
    assert job.model is None and not TrainedModel.objects.exists()


def test_a_corpus_that_vanished_fails_the_job_with_the_reason(admin, store):
    dataset = Dataset.objects.create(name="gone", path="datasets/gone.tsv", sha256="0" * 64, owner=admin)
    config = tiny_config()
    job = TrainingJob.objects.create(owner=admin, dataset=dataset, steps=60, config={"train": config})
    job_run(job_id=job.pk, worker="test")
    job.refresh_from_db()
    assert job.status == Status.FAILED
    assert "the corpus file of dataset 'gone' is missing" in job.error
    assert "failed:" in job.log


def test_a_job_whose_worker_kept_dying_fails_after_max_attempts(admin, store, settings):
    settings.TRAINING_MAX_ATTEMPTS = 3
    job = make_job(admin)
    TrainingJob.objects.filter(pk=job.pk).update(
        status=Status.RUNNING, attempts=3, step=17, lease_owner="dead/1/x",
        lease_expires_at=timezone.now() - timedelta(seconds=1))
    job_run(job_id=job.pk, worker="test")
    job.refresh_from_db()
    assert job.status == Status.FAILED
    assert "died during each of its 3 attempts (last seen at step 17)" in job.error
    assert job.finished_at is not None and job.lease_owner == ""


def test_a_second_delivery_never_runs_a_job_whose_lease_is_live(admin, store):
    job = make_job(admin)
    expires = timezone.now() + timedelta(seconds=30)
    TrainingJob.objects.filter(pk=job.pk).update(status=Status.RUNNING, attempts=1, lease_owner="alive/1/x",
                                                 lease_expires_at=expires)
    outcome = job_run(job_id=job.pk, worker="test")
    job.refresh_from_db()
    assert "looking again" in outcome and job.celery_id, "it looks again once the lease could have lapsed"
    assert (job.status, job.attempts, job.lease_owner) == (Status.RUNNING, 1, "alive/1/x")

    # The holder renewed its lease meanwhile: it is alive, so this delivery is a duplicate and goes away.
    outcome = job_run(job_id=job.pk, seen_lease=(expires - timedelta(seconds=5)).isoformat(), worker="test")
    assert "duplicate" in outcome
    job.refresh_from_db()
    assert (job.attempts, job.lease_owner) == (1, "alive/1/x")


def test_a_cancelled_or_finished_job_is_not_run_again(admin, store):
    job = make_job(admin)
    TrainingJob.objects.filter(pk=job.pk).update(status=Status.CANCELLED)
    assert "nothing to do" in job_run(job_id=job.pk, worker="test")
    assert "nothing to do" in job_run(job_id=10**9, worker="test")
    job.refresh_from_db()
    assert job.attempts == 0 and not job.folder.exists()


def test_a_folder_left_by_another_job_of_the_same_id_is_moved_aside(admin, store):
    job = make_job(admin, steps=20)
    job.folder.mkdir(parents=True)
    (job.folder / "job.json").write_text(json.dumps({"job": job.pk, "created_at": "2001-01-01T00:00:00"}))
    (job.folder / "train_state.json").write_text("{}")
    job_run(job_id=job.pk, worker="test")
    job.refresh_from_db()
    assert job.status == Status.SUCCEEDED and job.resumed_from_step is None
    assert len(list(job.folder.parent.glob(f"{job.pk}.stale-*"))) == 1
