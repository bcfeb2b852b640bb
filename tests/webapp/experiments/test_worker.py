"""End to end: a run goes through the `experiments` queue to a real worker, and its socket sees it live."""
from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from modelcore.experiments import canonical_params
from tests.fixtures.sockets import socket_for
from tests.webapp.experiments.conftest import TINY_COMPARE
from webapp.experiments.models import ExperimentRun
from webapp.experiments.services import params_key
from webapp.experiments.tasks import run_experiment_task

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]


async def test_a_worker_runs_it_and_the_socket_sees_progress_then_done(student, start_worker, empty_training_queue):
    await sync_to_async(start_worker)("experiments")
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
