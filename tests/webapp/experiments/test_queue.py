"""Students' experiment runs have their own queue and worker: they never wait behind a training job."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from modelcore.experiments import canonical_params
from tests.fixtures.experiments import TINY_COMPARE
from tests.fixtures.training import TINY_TASK_OPTIONS, tiny_config
from webapp.experiments.models import ExperimentRun
from webapp.experiments.services import experiment_queue_place, experiment_run_request, params_key
from webapp.lesson.models import TrainingRun
from webapp.training.models import TrainingJob
from webapp.training.services import job_cancel, job_create

# Runs only the test's own; a queued row is never dispatched without a worker.
QUEUED = ExperimentRun.Status.QUEUED


def queued_run(owner, seed: int) -> ExperimentRun:
    params = {**TINY_COMPARE, "seed": seed}
    return ExperimentRun.objects.create(kind="compare", params=canonical_params("compare", params),
                                        params_key=params_key("compare", params), owner=owner, status=QUEUED)


@pytest.mark.django_db
def test_a_queued_run_says_its_place_and_roughly_how_long_it_will_wait(client, student):
    runs = [queued_run(student, seed) for seed in range(3)]
    place = experiment_queue_place(run=runs[2])
    assert (place.place, place.ahead) == (3, 2)
    assert place.wait_s >= 2 * 10  # no run has finished here yet: ten seconds a run is the first guess
    client.force_login(student)
    page = client.get(f"/experiments/runs/{runs[2].pk}/").content.decode()
    assert "Place 3 in the queue: 2 runs ahead of it, about 20 s to wait." in page
    ExperimentRun.objects.filter(pk=runs[0].pk).update(status=ExperimentRun.Status.SUCCEEDED)
    runs[0].refresh_from_db()
    assert experiment_queue_place(run=runs[0]) is None  # a run that is not waiting has no place
    assert experiment_queue_place(run=runs[2]).place == 2
    # The panel asks again every few seconds: the line moves up, and goes once the run leaves the queue.
    line = client.get(f"/experiments/runs/{runs[2].pk}/queue/").content.decode()
    assert "Place 2 in the queue: 1 run ahead of it" in line and 'hx-trigger="every 5s"' in line
    assert client.get(f"/experiments/runs/{runs[0].pk}/queue/").content.decode().strip() == ""


def queued_lesson_run(owner, kind: str) -> TrainingRun:
    return TrainingRun.objects.create(key=f"train-{kind}-queued", kind=kind, params={}, owner=owner, status=QUEUED)


@pytest.mark.django_db
def test_the_lessons_training_comparisons_count_in_the_queue_they_share(client, student):
    first = queued_run(student, 0)
    lesson = queued_lesson_run(student, "mask")  # sent to the same `experiments` queue after `first`
    last = queued_run(student, 1)
    place = experiment_queue_place(run=last)
    assert (place.place, place.ahead, place.wait_s) == (3, 2, 10 + 15)  # a lesson run takes about 15 s
    client.force_login(student)
    page = client.get(f"/experiments/runs/{last.pk}/").content.decode()
    assert "Place 3 in the queue: 2 runs ahead of it, about 25 s to wait." in page

    # The lesson's run panel says where its run stands, as the experiment page does, and asks again.
    panel = client.get(f"/lesson/runs/{lesson.pk}/").content.decode()
    assert "Place 2 in the queue: 1 run ahead of it, about 10 s to wait." in panel
    assert f'hx-get="/lesson/runs/{lesson.pk}/queue/"' in panel and 'hx-trigger="every 5s"' in panel
    ExperimentRun.objects.filter(pk=first.pk).update(status=ExperimentRun.Status.SUCCEEDED)
    assert "Place 1 in the queue: 0 runs ahead of it" in client.get(f"/lesson/runs/{lesson.pk}/queue/").content.decode()

    # Running, the lesson's run holds the worker: the experiment run behind it waits for about half of it.
    TrainingRun.objects.filter(pk=lesson.pk).update(status=TrainingRun.Status.RUNNING)
    place = experiment_queue_place(run=last)
    assert (place.place, place.ahead, place.wait_s) == (1, 1, 8)
    assert client.get(f"/lesson/runs/{lesson.pk}/queue/").content.decode().strip() == ""  # it left the queue
    assert 'data-testid="run-queue"' not in client.get(f"/lesson/runs/{lesson.pk}/").content.decode()


@pytest.mark.services
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_students_run_started_during_a_training_job_finishes_in_its_own_time(
    admin, student, start_worker, empty_training_queue, tmp_path: Path
):
    store = tmp_path / "store"
    store.mkdir()
    start_worker("training", env={"MODEL_STORE": str(store), "OMP_NUM_THREADS": "1", "MODELCORE_DEVICE": "cpu"})
    start_worker("experiments", env={"OMP_NUM_THREADS": "1"})
    job = job_create(owner=admin, config=tiny_config(steps=100_000, checkpoint_every=1000), task="reverse",
                     task_options=TINY_TASK_OPTIONS)
    deadline = time.monotonic() + 120
    while job.status != TrainingJob.Status.RUNNING or job.step < 1:
        assert time.monotonic() < deadline, f"the training job never started: {job.status}\n{job.log}"
        time.sleep(0.2)
        job.refresh_from_db()

    run = experiment_run_request(user=student, kind="compare", params=TINY_COMPARE).run
    deadline = time.monotonic() + 120
    while run.status not in (ExperimentRun.Status.SUCCEEDED, ExperimentRun.Status.FAILED):
        assert time.monotonic() < deadline, f"the run never finished: {run.status}"
        time.sleep(0.2)
        run.refresh_from_db()
    job.refresh_from_db()
    try:
        assert run.status == ExperimentRun.Status.SUCCEEDED, run.error
        assert job.status == TrainingJob.Status.RUNNING  # the job was still training all along
        own = (run.finished_at - run.started_at).total_seconds()
        total = (run.finished_at - run.created_at).total_seconds()
        assert total <= own + 5, f"the run took {own:.1f} s but finished {total:.1f} s after it was asked for"
    finally:
        job_cancel(job=job)
