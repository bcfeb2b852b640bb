"""End to end: a run goes through the `experiments` queue to a real worker, and its socket sees it live."""
from __future__ import annotations

import time

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from modelcore.experiments import canonical_params
from tests.fixtures.experiments import TINY_COMPARE
from tests.fixtures.sockets import socket_for
from webapp.experiments.models import ExperimentRun
from webapp.experiments.services import experiment_run_execute, params_key
from webapp.experiments.tasks import run_experiment_task

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]


async def test_a_worker_runs_it_and_the_socket_sees_progress_then_done(student, shared_worker, empty_training_queue):
    await sync_to_async(shared_worker)("experiments")
    run = await database_sync_to_async(ExperimentRun.objects.create)(
        kind="compare", params=canonical_params("compare", TINY_COMPARE),
        params_key=params_key("compare", TINY_COMPARE), owner=student)
    ws = await socket_for(f"/ws/experiments/{run.pk}/", student)
    await ws.connect()
    assert (await ws.receive_json_from())["status"] == "queued"
    await sync_to_async(run_experiment_task.delay)(run.pk)  # subscribed first: nothing can be missed
    frames = [await ws.receive_json_from(timeout=120)]
    while frames[-1]["type"] not in ("done", "failed"):
        frames.append(await ws.receive_json_from(timeout=120))
    assert frames[-1]["type"] == "done", frames[-1]
    progress = [f for f in frames if f["type"] == "progress"]
    assert progress and {f["arm"] for f in progress} <= {"post", "pre"}
    assert progress[-1]["progress"] == 1.0
    done = await database_sync_to_async(ExperimentRun.objects.get)(pk=run.pk)
    assert done.status == "succeeded" and [a["label"] for a in done.result["arms"]] == ["post", "pre"]
    await ws.disconnect()


def test_a_queued_run_whose_message_is_gone_runs_once_a_worker_connects(student, start_worker, empty_training_queue):
    """As after a Redis that restarted empty: the run is queued in the database and in no queue."""
    run = ExperimentRun.objects.create(kind="compare", params=canonical_params("compare", TINY_COMPARE),
                                       params_key=params_key("compare", TINY_COMPARE), owner=student)
    start_worker("experiments", env={"OMP_NUM_THREADS": "1"})  # its consumer connects: queued runs are sent again
    deadline = time.monotonic() + 120
    while run.status not in (ExperimentRun.Status.SUCCEEDED, ExperimentRun.Status.FAILED):
        assert time.monotonic() < deadline, f"the run was never run: {run.status}"
        time.sleep(0.2)
        run.refresh_from_db()
    assert run.status == ExperimentRun.Status.SUCCEEDED, run.error
    assert run.result is not None and run.result["kind"] == "compare"


def test_a_second_delivery_of_an_ended_run_changes_nothing(student):
    """Sending queued runs again may deliver one twice: the second finds it ended and leaves it as it is."""
    run = ExperimentRun.objects.create(kind="compare", params=canonical_params("compare", TINY_COMPARE),
                                       params_key=params_key("compare", TINY_COMPARE), owner=student,
                                       status=ExperimentRun.Status.FAILED, error="TrainingDiverged: nan at step 3")
    experiment_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert (run.status, run.error, run.result) == (ExperimentRun.Status.FAILED, "TrainingDiverged: nan at step 3", None)
