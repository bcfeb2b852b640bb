"""Shared fixtures: named users, a real Redis, real Celery workers, a real ASGI server and Chromium."""
from __future__ import annotations

import os

import pytest

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Each xdist worker's torch on one thread (set before torch is imported; the processes its tests start inherit
    # it): two workers' OpenMP threads spinning on two cores slowed a training test tenfold.
    os.environ.setdefault("OMP_NUM_THREADS", "1")

pytest_plugins = [
    "tests.fixtures.users",
    "tests.fixtures.services",
    "tests.fixtures.browser",
    "tests.fixtures.models",
    "tests.fixtures.demo",
    "tests.fixtures.worker",
    "tests.fixtures.process_log",
]


def pytest_configure(config) -> None:
    """Remove the run folders of test processes that died without removing theirs (killed, timed out): each is
    named by its process id, and one whose process is gone serves nobody."""
    import re
    import shutil
    import tempfile
    from pathlib import Path

    for folder in Path(tempfile.gettempdir()).glob("encdec-test-*"):
        match = re.fullmatch(r"encdec-test-(\d+)(?:-gw\d+)?", folder.name)
        if match is None:
            continue
        try:
            os.kill(int(match.group(1)), 0)  # signal 0: only asks whether the process exists
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except PermissionError:  # another user's live process
            pass


def pytest_unconfigure(config) -> None:
    """Stop the helper that started this process's workers and servers (tests/fixtures/prestart.py), then remove
    this run's folder (webapp/settings/test.py) once its Redis and database are gone: only the process that made it
    does, not the xdist controller for a worker's or a worker for another's."""
    import os
    import shutil

    from tests.fixtures import prestart

    prestart.close()
    run = os.environ.get("ENCDEC_TEST_RUN_DIR")
    if run and os.environ.get("ENCDEC_TEST_RUN_DIR_OWNER") == str(os.getpid()):
        shutil.rmtree(run, ignore_errors=True)


def pytest_collection_modifyitems(session, config, items) -> None:
    """Within a file, the tests that ask for the shared workers run first, together (one worker start for them, not
    one after each test that stops them). Under xdist (make test TEST_WORKERS=3): files with slow tests first, then
    those with browser tests, then the rest: xdist hands out whole files (--dist loadfile) in this order, so the
    longest start early and the short ones fill in beside them. Otherwise the files keep their collected order."""
    position = {path: i for i, path in enumerate(dict.fromkeys(item.path for item in items))}
    group = dict.fromkeys(position, 0)
    if getattr(config.option, "numprocesses", None):
        slow = {item.path for item in items if item.get_closest_marker("slow")}
        browser = {item.path for item in items if item.get_closest_marker("e2e")}
        group = {path: 0 if path in slow - browser else 1 if path in browser else 2 for path in position}
    items.sort(key=lambda item: (group[item.path], position[item.path], "shared_worker" not in item.fixturenames))


@pytest.fixture(autouse=True)
def _language_reset():
    """Each test starts in the default language: one that switched to Chinese and did not switch back made the
    next test in that process read Chinese labels (seen when xdist ordered the files differently)."""
    from django.utils import translation

    yield
    translation.deactivate()
