"""Running an experiment in the worker process: progress, stored result, failures marked."""
from __future__ import annotations

import pytest

from tests.fixtures.experiments import TINY_COMPARE
from webapp.experiments.models import ExperimentRun
from webapp.experiments.services import experiment_run_execute, experiment_run_request, params_key

pytestmark = pytest.mark.django_db


def test_a_run_executes_to_done_with_its_result_stored(student):
    run = experiment_run_request(user=student, kind="compare", params=TINY_COMPARE).run
    experiment_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "succeeded" and run.progress == 1.0 and run.started_at and run.finished_at
    assert [arm["label"] for arm in run.result["arms"]] == ["post", "pre"]
    assert len(run.result["arms"][1]["run"]["loss"]) == 6


def test_a_run_that_raises_is_marked_failed_with_the_reason(student):
    params = dict(TINY_COMPARE)
    run = experiment_run_request(user=student, kind="compare", params=params).run
    ExperimentRun.objects.filter(pk=run.pk).update(params={**run.params, "d_model": 30})  # corrupted on disk
    experiment_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "failed" and "divisible" in run.error


def test_a_failed_run_is_tried_again_when_asked_again(student):
    run = experiment_run_request(user=student, kind="compare", params=TINY_COMPARE).run
    ExperimentRun.objects.filter(pk=run.pk).update(status="failed", error="worker lost")
    again = experiment_run_request(user=student, kind="compare", params=TINY_COMPARE)
    assert again.created and again.run.pk == run.pk and again.run.status == "queued" and again.run.error == ""


def test_the_key_does_not_depend_on_spelled_out_defaults():
    assert params_key("compare", TINY_COMPARE) == params_key("compare", {**TINY_COMPARE, "seed": 0, "residual": True})
    assert params_key("compare", TINY_COMPARE) != params_key("compare", {**TINY_COMPARE, "seed": 1})
