"""A published tiny model and a real interactive worker for the playground's tests."""
from __future__ import annotations

import pytest

from tests.fixtures.models import make_model_folder
from webapp.ops.redis_client import app_redis


@pytest.fixture(autouse=True)
def fresh_limits(redis_server):
    """Each test starts with no recorded requests and no cached model (ids and names repeat between tests)."""
    from webapp.ops import worker_presence
    from webapp.playground import services
    from webapp.playground.keys import PREFIX

    services._models.clear()  # model names repeat from test to test, with other folders
    worker_presence._read[0] = float("-inf")  # whether a worker is up is read afresh
    client = app_redis()
    stale = list(client.scan_iter(f"{PREFIX}:*"))
    if stale:
        client.delete(*stale)


@pytest.fixture
def present_worker(redis_server):
    """An interactive worker's presence key, for tests of the queueing path that run no worker."""
    from webapp.ops.worker_presence import PREFIX, workers_publish

    client = app_redis()
    workers_publish(client, "present@test", ["interactive"])
    yield
    client.delete(PREFIX + "present@test")


@pytest.fixture
def worker(shared_worker):
    """A real `interactive` Celery worker: the one the tests of this pytest process share (it needs no database:
    jobs carry paths)."""
    return shared_worker("interactive")


@pytest.fixture
def tiny(transactional_db, tmp_path):
    """A published model named `tiny` (random weights, reverse task), registered as the admins would."""
    from webapp.registry.services import model_register_folder

    folder = make_model_folder(tmp_path / "tiny")
    return model_register_folder(folder=folder, name="tiny", task="reverse", published=True)
