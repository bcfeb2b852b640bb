"""A lesson training comparison whose message died with Redis still runs: an `experiments` worker sends every queued
comparison again when it connects (a Redis that restarts empty keeps no message); a second delivery of one that
ended changes nothing."""
from __future__ import annotations

import time

import pytest

from webapp.lesson.models import TrainingRun
from webapp.lesson.services import training_execute

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.mark.services
@pytest.mark.slow
def test_a_queued_comparison_whose_message_is_gone_starts_once_a_worker_connects(student, start_worker,
                                                                                 empty_training_queue):
    run = TrainingRun.objects.create(key="train:mask:lost", kind="mask", params={}, owner=student)  # in no queue
    start_worker("experiments", env={"OMP_NUM_THREADS": "1"})  # its consumer connects: queued runs are sent again
    deadline = time.monotonic() + 60
    while run.status == TrainingRun.Status.QUEUED:
        assert time.monotonic() < deadline, "the comparison was never sent again"
        time.sleep(0.2)
        run.refresh_from_db()
    assert run.status in (TrainingRun.Status.RUNNING, TrainingRun.Status.SUCCEEDED)


def test_a_second_delivery_of_an_ended_comparison_changes_nothing(student):
    for status, error in ((TrainingRun.Status.FAILED, "TrainingDiverged: nan at step 3"),
                          (TrainingRun.Status.SUCCEEDED, "")):
        run = TrainingRun.objects.create(key=f"train:mask:{status}", kind="mask", params={}, owner=student,
                                         status=status, error=error, progress=1.0 if error == "" else 0.4)
        training_execute(run_id=run.pk)
        run.refresh_from_db()
        assert (run.status, run.error, run.result) == (status, error, None)
