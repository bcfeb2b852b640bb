"""/ws/training/<id>/: admins only; a snapshot, then the run's steps, log lines and status as they happen."""
from __future__ import annotations

import asyncio

import pytest
import torch
from channels.db import database_sync_to_async

from tests.fixtures.sockets import socket_for
from tests.fixtures.training import TINY_TASK_OPTIONS, tiny_config
from webapp.training.models import TrainingJob
from webapp.training.runner import job_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]
Status = TrainingJob.Status


@database_sync_to_async
def make_job(owner, **overrides) -> TrainingJob:
    config = tiny_config(**overrides)
    return TrainingJob.objects.create(owner=owner, task="reverse", steps=config["steps"],
                                      config={"train": config, "task_options": TINY_TASK_OPTIONS})


async def test_students_instructors_and_anonymous_visitors_are_refused(student, instructor, admin):
    job = await make_job(admin)
    for user in (None, student, instructor):
        ws = await socket_for(f"/ws/training/{job.pk}/", user)
        connected, _ = await ws.connect()
        assert not connected, user


async def test_an_unknown_job_is_named_and_the_socket_closed(admin):
    ws = await socket_for("/ws/training/999999/", admin)
    await ws.connect()
    frame = await ws.receive_json_from()
    assert frame["code"] == "not_found" and "999999" in frame["message"]
    assert (await ws.receive_output())["type"] == "websocket.close"


async def test_a_watcher_sees_every_step_arrive_in_order_then_the_end(admin, store):
    job = await make_job(admin, steps=40)
    ws = await socket_for(f"/ws/training/{job.pk}/", admin)
    assert (await ws.connect())[0]
    snapshot = await ws.receive_json_from()
    assert (snapshot["type"], snapshot["status"], snapshot["step"], snapshot["steps"]) == ("snapshot", "queued", 0, 40)
    badge = await socket_for("/ws/notify/", admin)
    await badge.connect()
    await badge.receive_json_from()  # hello

    def run() -> str:
        torch.set_num_threads(1)
        return job_run(job_id=job.pk, worker="test")

    # Channels' wrapper closes the thread's database connection afterwards: a connection left open
    # in an executor thread keeps the test database from being dropped at the end of the session.
    running = asyncio.ensure_future(database_sync_to_async(run, thread_sensitive=False)())
    frames = []
    while not frames or frames[-1].get("type") != "status" or frames[-1]["status"] == Status.RUNNING:
        frames.append(await ws.receive_json_from(timeout=60))
    await running

    steps = [f["step"] for f in frames if f["type"] == "step"]
    assert steps and steps == sorted(set(steps)) and steps[-1] == 40, "in order, none twice, the last one sent"
    assert all(0 < f["loss"] < 20 and f["progress"] == f["step"] / 40 for f in frames if f["type"] == "step")
    assert any(f["type"] == "log" and "attempt 1 of 3" in f["line"] for f in frames)
    assert frames[-1]["status"] == Status.SUCCEEDED and frames[-1]["model"] == f"job-{job.pk}-reverse"
    notes = [await badge.receive_json_from(timeout=10)]
    while notes[-1]["status"] != Status.SUCCEEDED:
        notes.append(await badge.receive_json_from(timeout=10))
    assert notes[0] == {"type": "training", "job": job.pk, "status": "running", "progress": 0.0, "active": 1}
    assert notes[-1]["active"] == 0, "the nav badge empties when the last job ends"
    await ws.disconnect()
    await badge.disconnect()


async def test_an_admin_cancels_a_queued_job_over_the_socket(admin):
    job = await make_job(admin)
    ws = await socket_for(f"/ws/training/{job.pk}/", admin)
    await ws.connect()
    await ws.receive_json_from()
    await ws.send_json_to({"type": "cancel"})
    assert await ws.receive_json_from(timeout=10) == {"type": "status", "status": "cancelled"}
    await database_sync_to_async(job.refresh_from_db)()
    assert job.status == Status.CANCELLED
    await ws.disconnect()


async def test_an_admin_demoted_while_watching_can_no_longer_cancel(admin):
    job = await make_job(admin)
    ws = await socket_for(f"/ws/training/{job.pk}/", admin)
    await ws.connect()
    await ws.receive_json_from()
    # Demoted without the signal that closes the user's sockets (as when Redis missed it): the action is refused.
    await database_sync_to_async(type(admin).objects.filter(pk=admin.pk).update)(is_staff=False, is_superuser=False)
    await ws.send_json_to({"type": "cancel"})
    reply = await ws.receive_json_from(timeout=10)
    assert reply["type"] == "error" and reply["code"] == "forbidden"
    await database_sync_to_async(job.refresh_from_db)()
    assert job.status == Status.QUEUED
    await ws.disconnect()
