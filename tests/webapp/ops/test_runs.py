"""The run lifecycle the experiments and the lesson share (webapp.ops.runs): each table's resend after a Redis
restart is a worker step of its own, and sends again exactly its own queued runs, to its queue."""
from __future__ import annotations

import pytest

import webapp.experiments.tasks  # noqa: F401  (each tasks module adds its table's resend step)
import webapp.lesson.tasks  # noqa: F401
from webapp.celery import app
from webapp.experiments.models import ExperimentRun
from webapp.experiments.services import RUN_TASK
from webapp.experiments.services import RUNS as EXPERIMENT_RUNS
from webapp.lesson.models import TrainingRun
from webapp.lesson.services import RUNS as LESSON_RUNS
from webapp.lesson.services import TRAIN_TASK
from webapp.ops.runs import TABLES


def test_every_table_of_runs_has_a_resend_step_of_its_own_on_its_queue():
    assert {table.model for table in TABLES} == {ExperimentRun, TrainingRun}
    steps = {step.name for step in app.steps["consumer"]}
    for table in TABLES:  # two tables on one queue: neither step may take the other's place
        assert f"webapp.ops.broker.on_connect.{table.queue}.{table.task}" in steps


@pytest.mark.django_db
def test_a_resend_sends_its_own_queued_runs_again_and_no_others(monkeypatch, student):
    sent: list[tuple[str, list[int], dict]] = []
    monkeypatch.setattr(app, "send_task", lambda name, args, **options: sent.append((name, args, options)))
    queued = ExperimentRun.objects.create(kind="compare", params={}, params_key="q" * 64, owner=student)
    ExperimentRun.objects.create(kind="compare", params={}, params_key="r" * 64, owner=student,
                                 status=ExperimentRun.Status.RUNNING)
    lesson = TrainingRun.objects.create(key="train-mask-queued", kind="mask", params={}, owner=student)
    TrainingRun.objects.create(key="train-ffn-done", kind="ffn", params={}, owner=student,
                               status=TrainingRun.Status.SUCCEEDED)

    assert EXPERIMENT_RUNS.resend_queued() == 1
    assert LESSON_RUNS.resend_queued() == 1
    assert sent == [(RUN_TASK, [queued.pk], {"queue": "experiments"}),
                    (TRAIN_TASK, [lesson.pk], {"queue": "experiments"})]
