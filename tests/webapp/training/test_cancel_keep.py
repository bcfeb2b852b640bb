"""An admin cannot lose a trained model by one click: Cancel asks first and offers to keep the last checkpoint."""
from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from tests.fixtures.training import TINY_TASK_OPTIONS, tiny_config
from webapp.registry.models import TrainedModel
from webapp.training.models import TrainingJob

pytestmark = [pytest.mark.django_db]
Status = TrainingJob.Status


@pytest.fixture
def running_job(admin, store: Path) -> TrainingJob:
    """A job that trained 20 of its 60 steps (a real checkpoint in its folder) and is running now."""
    from modelcore.tasks import get_task
    from modelcore.training import TrainConfig, train

    config = tiny_config(steps=20, checkpoint_every=10)
    job = TrainingJob.objects.create(owner=admin, task="reverse", steps=60, config={"train": tiny_config()},
                                     status=Status.RUNNING, step=23, lease_owner="w/1/x",
                                     lease_expires_at=timezone.now() + timedelta(seconds=30),
                                     evals=[{"step": 10, "exact_match": 0.25, "bleu": 40.0},
                                            {"step": 20, "exact_match": 1.0, "bleu": 100.0}])
    train(get_task("reverse", seed=0, **TINY_TASK_OPTIONS), job.folder, TrainConfig(**config, device="cpu"))
    return job


def test_the_running_jobs_page_offers_cancel_only_as_a_link_to_a_question(client_as, admin, running_job):
    page = client_as(admin).get(f"/training/jobs/{running_job.pk}/").content.decode()
    cancel = page.split('data-testid="cancel"', 1)[0].rsplit("<", 1)[1]
    assert cancel.startswith("a ") and "primary" not in cancel and f"/training/jobs/{running_job.pk}/cancel/" in cancel
    running_job.refresh_from_db()
    assert running_job.status == Status.RUNNING and not running_job.cancel_requested  # opening the page cancels nothing


def test_the_question_names_the_checkpoint_and_its_validation_figures(client_as, admin, running_job):
    response = client_as(admin).get(f"/training/jobs/{running_job.pk}/cancel/")
    page = response.content.decode()
    assert response.status_code == 200
    assert "Keep the last checkpoint (step 20) as a model" in page
    figures = page.split('data-testid="checkpoint-figures">', 1)[1].split("</p>", 1)[0]
    assert "exact match 1.000 · BLEU 100.0" in figures and "exact_match" not in figures  # step 20's, readable
    assert 'name="keep" value="1" checked' in page
    assert page.index('data-testid="keep-training"') < page.index('data-testid="confirm-cancel"')
    assert 'class="primary" href="/training/jobs/' in page  # the main action is to keep training
    running_job.refresh_from_db()
    assert not running_job.cancel_requested


def test_the_checkpoints_figures_read_in_chinese(client_as, admin, running_job):
    client = client_as(admin)
    client.cookies["django_language"] = "zh-hans"
    page = client.get(f"/training/jobs/{running_job.pk}/cancel/").content.decode()
    figures = page.split('data-testid="checkpoint-figures">', 1)[1].split("</p>", 1)[0]
    assert "完全匹配率 1.000 · BLEU 100.0" in figures and "exact" not in figures


def test_cancelling_with_keep_registers_the_checkpoint_as_a_model(client_as, admin, running_job, store):
    response = client_as(admin).post(f"/training/jobs/{running_job.pk}/cancel/", {"keep": "1"}, follow=True)
    running_job.refresh_from_db()
    assert running_job.cancel_requested
    model = TrainedModel.objects.get(pk=running_job.model_id)
    assert model.name == f"job-{running_job.pk}-reverse-step-20" and not model.published
    assert model.metrics["step"] == 20
    kept = Path(model.path)
    assert kept.parent == store / "kept" and (kept / "model.safetensors").is_file()  # a copy: a retry cannot change it
    assert f"kept as the model {model.name}" in response.content.decode()


def test_cancelling_without_keep_registers_nothing(client_as, admin, running_job):
    client_as(admin).post(f"/training/jobs/{running_job.pk}/cancel/")
    running_job.refresh_from_db()
    assert running_job.cancel_requested and running_job.model_id is None
    assert not TrainedModel.objects.exists()


def test_a_cancelled_jobs_checkpoint_can_still_be_kept(client_as, admin, running_job):
    TrainingJob.objects.filter(pk=running_job.pk).update(status=Status.CANCELLED, finished_at=timezone.now())
    page = client_as(admin).get(f"/training/jobs/{running_job.pk}/").content.decode()
    assert "Keep the checkpoint at step 20 as a model" in page
    client_as(admin).post(f"/training/jobs/{running_job.pk}/keep/")
    running_job.refresh_from_db()
    assert running_job.model.name == f"job-{running_job.pk}-reverse-step-20"
    page = client_as(admin).get(f"/training/jobs/{running_job.pk}/").content.decode()
    assert "Keep the checkpoint at step" not in page  # kept once; the page names the model instead


def test_a_student_can_neither_open_the_question_nor_keep(client_as, student, running_job):
    assert client_as(student).get(f"/training/jobs/{running_job.pk}/cancel/").status_code == 403
    assert client_as(student).post(f"/training/jobs/{running_job.pk}/keep/").status_code == 403
    assert not TrainedModel.objects.exists()
