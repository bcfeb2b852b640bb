"""/healthz against a real Redis and real Celery worker processes."""
from __future__ import annotations

import pytest
from django.test import Client

pytestmark = [pytest.mark.services, pytest.mark.django_db]


def test_it_reports_503_until_each_queue_has_a_worker(isolated_redis, start_worker, settings):
    settings.REDIS_URL = isolated_redis
    client = Client()
    report = client.get("/healthz")
    assert report.status_code == 503
    assert report.json()["workers"] == {"interactive": 0, "training": 0}
    assert report.json()["redis"]["ok"] and report.json()["database"]["ok"]

    start_worker("interactive", redis_url=isolated_redis)
    report = client.get("/healthz")
    assert report.status_code == 503
    assert report.json()["workers"] == {"interactive": 1, "training": 0}

    start_worker("training", redis_url=isolated_redis)
    report = client.get("/healthz")
    assert report.status_code == 200, report.json()
    assert report.json()["workers"] == {"interactive": 1, "training": 1}
    assert report.json()["status"] == "ok"


def test_it_reports_503_when_redis_is_down(settings, tmp_path):
    settings.REDIS_URL = f"unix://{tmp_path}/nothing-here.sock"
    report = Client().get("/healthz")
    assert report.status_code == 503
    assert report.json()["redis"]["ok"] is False
    assert "Error" in report.json()["redis"]["error"]


def test_a_worker_runs_tasks_sent_to_its_queue(start_worker):
    from webapp.celery import ping

    start_worker("interactive")
    assert ping.apply_async(queue="interactive").get(timeout=30) == "pong"
