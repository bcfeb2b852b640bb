"""The /training/ pages: who may open them, the job form's checks, the list, cancel and retry."""
from __future__ import annotations

import pytest

from tests.fixtures.training import tiny_config
from webapp.training.models import TrainingJob

pytestmark = [pytest.mark.django_db]
Status = TrainingJob.Status

VALID_FORM = {
    "task": "reverse", "layers": "2", "d_model": "32", "n_heads": "2", "d_ff": "64", "norm_position": "pre",
    "norm": "layernorm", "residual": "on", "dropout": "0.1", "steps": "50", "batch_size": "16", "schedule": "noam",
    "warmup_steps": "10", "lr_factor": "1.0", "lr": "0.001", "seed": "3", "checkpoint_every": "10", "eval_every": "0",
}


@pytest.fixture
def job(admin) -> TrainingJob:
    config = tiny_config()
    return TrainingJob.objects.create(owner=admin, task="reverse", steps=config["steps"], config={"train": config})


@pytest.mark.parametrize("suffix", ["", "cancel/", "retry/"])
def test_only_admins_reach_a_job(suffix, job, client_as, student, instructor, admin, empty_training_queue):
    path = f"/training/jobs/{job.pk}/{suffix}"
    send = (lambda c: c.post(path)) if suffix else (lambda c: c.get(path))
    anonymous = send(client_as(None))
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
    assert send(client_as(student)).status_code == 403
    assert send(client_as(instructor)).status_code == 403
    assert send(client_as(admin)).status_code in (200, 302)


def test_the_form_queues_a_job_with_the_whole_configuration(client_as, admin, empty_training_queue,
                                                            django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as dispatched:
        response = client_as(admin).post("/training/new/", VALID_FORM)
    job = TrainingJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/training/jobs/{job.pk}/"
    assert (job.status, job.task, job.owner, job.steps) == (Status.QUEUED, "reverse", admin, 50)
    train = job.config["train"]
    assert train["model"] == {"d_model": 32, "n_heads": 2, "d_ff": 64, "n_encoder_layers": 2, "n_decoder_layers": 2,
                              "norm_position": "pre", "norm": "layernorm", "residual": True, "dropout": 0.1}
    assert (train["batch_size"], train["warmup_steps"], train["seed"], train["checkpoint_every"]) == (16, 10, 3, 10)
    assert len(dispatched) == 1 and job.celery_id, "a message went to the training queue once the job was saved"


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"n_heads": "3"}, "n_heads", "must be a multiple of the number of heads"),
        ({"steps": "0"}, "steps", "greater than or equal to 1"),
        ({"layers": "40"}, "layers", "less than or equal to 12"),
        ({"dropout": "0.9"}, "dropout", "less than or equal to 0.5"),
        ({"d_model": "big"}, "d_model", "Enter a whole number"),
        ({"norm_position": "middle"}, "norm_position", "Select a valid choice"),
        ({"task": ""}, "task", "Choose a task or an uploaded corpus"),
    ],
)
def test_a_mistake_is_shown_beside_its_field(changes, field, message, client_as, admin):
    response = client_as(admin).post("/training/new/", {**VALID_FORM, **changes})
    assert response.status_code == 400
    html = response.content.decode()
    beside = html.split(f'data-field="{field}"', 1)[1].split('data-field="', 1)[0]
    assert message in beside, beside
    assert not TrainingJob.objects.exists()


def test_the_list_shows_queue_positions_status_and_progress(client_as, admin, job):
    config = tiny_config()
    second = TrainingJob.objects.create(owner=admin, task="copy", steps=60, config={"train": config})
    running = TrainingJob.objects.create(owner=admin, task="sort", steps=60, step=30, status=Status.RUNNING,
                                         config={"train": config})
    html = client_as(admin).get("/training/").content.decode()
    assert "#1 in queue" in _cell(html, f"position-{job.pk}") and "#2 in queue" in _cell(html, f"position-{second.pk}")
    assert 'aria-valuenow="50"' in html.split(f'data-testid="progress-{running.pk}"')[0].rsplit("<div", 1)[1]
    assert 'hx-trigger="every 2s"' in html, "the table refreshes itself while jobs are active"


def test_the_nav_badge_counts_my_active_jobs(client_as, admin, job):
    html = client_as(admin).get("/models/").content.decode()
    badge = html.split('data-testid="training-badge"', 1)[1].split(">", 1)
    assert 'data-active="1"' in badge[0] and badge[1].startswith("1<")


def test_a_failed_job_shows_its_reason_and_can_be_retried(client_as, admin, job, empty_training_queue):
    TrainingJob.objects.filter(pk=job.pk).update(status=Status.FAILED, error="TrainingDiverged: the loss became nan",
                                                 attempts=2)
    page = client_as(admin).get(f"/training/jobs/{job.pk}/").content.decode()
    assert "the loss became nan" in page and 'data-testid="retry"' in page

    client_as(admin).post(f"/training/jobs/{job.pk}/retry/")
    job.refresh_from_db()
    assert (job.status, job.error, job.attempts) == (Status.QUEUED, "", 0)
    assert "queued again by an admin" in job.log


def test_cancelling_a_queued_job_ends_it_at_once(client_as, admin, job):
    client_as(admin).post(f"/training/jobs/{job.pk}/cancel/")
    job.refresh_from_db()
    assert job.status == Status.CANCELLED and job.finished_at is not None


def test_cancelling_a_running_job_asks_its_run_to_stop(client_as, admin, job):
    from datetime import timedelta

    from django.utils import timezone

    TrainingJob.objects.filter(pk=job.pk).update(status=Status.RUNNING, lease_owner="w/1/x",
                                                 lease_expires_at=timezone.now() + timedelta(seconds=30))
    client_as(admin).post(f"/training/jobs/{job.pk}/cancel/")
    job.refresh_from_db()
    assert job.status == Status.RUNNING and job.cancel_requested, "the run itself ends it at its next step"


def _cell(html: str, testid: str) -> str:
    return html.split(f'data-testid="{testid}"', 1)[1].split("</td>", 1)[0]


def test_a_model_the_training_worker_cannot_hold_is_refused(client_as, admin, settings):
    big = {**VALID_FORM, "layers": "12", "d_model": "1024", "n_heads": "16", "d_ff": "8192"}  # 8.3 GiB of state
    response = client_as(admin).post("/training/new/", big)
    assert response.status_code == 400
    assert "for its weights, gradients and optimizer state alone" in response.content.decode()
    assert not TrainingJob.objects.exists()
    settings.TRAINING_WORKER_MEMORY_GIB = 16  # a bigger worker takes it
    assert client_as(admin).post("/training/new/", big).status_code == 302


def _large_vocabulary_corpus() -> bytes:
    """About 2,700 pairs of ten distinct CJK characters each: a character vocabulary of about 25,000 a side."""
    chars = [chr(c) for c in (*range(0x4E00, 0x9FFF), *range(0x3400, 0x4DBF))]
    n = len(chars) // 10
    line = lambda i: "".join(chars[i * 10:(i + 1) * 10])  # noqa: E731
    return "\n".join(f"{line(i)}\t{line((i + n // 2) % n)}" for i in range(n)).encode()


def test_a_corpus_with_a_large_vocabulary_counts_its_real_vocabulary(client_as, admin, settings, store,
                                                                      empty_training_queue):
    from webapp.training.datasets import dataset_upload

    corpus = dataset_upload(name="many-chars", filename="many.tsv", data=_large_vocabulary_corpus(), owner=admin)
    model = {"layers": "2", "d_model": "1024", "n_heads": "16", "d_ff": "4096"}
    settings.TRAINING_WORKER_MEMORY_GIB = 1
    small = client_as(admin).post("/training/new/", {**VALID_FORM, **model})  # "reverse": 24 symbols a side
    assert small.status_code == 302, "0.9 GiB: a 1 GiB worker holds it"
    large = client_as(admin).post("/training/new/", {**VALID_FORM, **model, "task": "", "dataset": corpus.pk})
    assert large.status_code == 400  # the same layers with ~25,000 embeddings a side: 2.0 GiB
    assert "This model needs 2.0 GiB for its weights, gradients and optimizer state alone" in large.content.decode()
    assert TrainingJob.objects.count() == 1
    settings.TRAINING_WORKER_MEMORY_GIB = 3
    assert client_as(admin).post("/training/new/", {**VALID_FORM, **model, "task": "", "dataset": corpus.pk}
                                 ).status_code == 302


def test_a_corpus_whose_file_is_gone_is_refused_without_the_servers_path(client_as, admin, store):
    from webapp.training.datasets import dataset_upload

    corpus = dataset_upload(name="gone", filename="gone.tsv", data=_large_vocabulary_corpus(), owner=admin)
    corpus.file.unlink()
    response = client_as(admin).post("/training/new/", {**VALID_FORM, "task": "", "dataset": corpus.pk})
    page = response.content.decode()
    assert response.status_code == 400 and "This data cannot be read" in page and "is missing" in page
    assert str(store) not in page and not TrainingJob.objects.exists()
