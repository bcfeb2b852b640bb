"""Shared fixtures: named users, a real Redis, real Celery workers, a real ASGI server and Chromium."""
from __future__ import annotations

pytest_plugins = [
    "tests.fixtures.users",
    "tests.fixtures.services",
    "tests.fixtures.browser",
    "tests.fixtures.models",
    "tests.fixtures.demo",
    "tests.fixtures.worker",
]


def pytest_unconfigure(config) -> None:
    """Remove this run's folder (webapp/settings/test.py) once its Redis and database are gone: only the process
    that made it does, not the xdist controller for a worker's or a worker for another's."""
    import os
    import shutil

    run = os.environ.get("ENCDEC_TEST_RUN_DIR")
    if run and os.environ.get("ENCDEC_TEST_RUN_DIR_OWNER") == str(os.getpid()):
        shutil.rmtree(run, ignore_errors=True)
