"""pytest: a file SQLite test database (worker processes must see it) and a per-run embedded Redis."""
from __future__ import annotations

import os
import tempfile

os.environ.setdefault("SECRET_KEY", "test-only-insecure-key")
# Tests time-limit their waits on demonstrations; three pytest processes share the cores, so the workers they start
# keep the priority they were started with unless a test asks (tests/webapp/ops/test_priority.py).
os.environ.setdefault("BACKGROUND_WORKER_NICE", "0")


def _run_dir() -> str:
    """This test run's folder (the embedded Redis' socket, the SQLite file).

    The pytest process makes it and exports it; the processes its tests start (Celery workers, daphne)
    inherit it through the environment and make none of their own. Under pytest-xdist each xdist worker
    has its own (`...-gw0`), so that two of them never share a Redis or a database. The process that
    made it removes it at the end (tests/conftest.py).
    """
    inherited = os.environ.get("ENCDEC_TEST_RUN_DIR")
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if inherited and (not worker or inherited.endswith(f"-{worker}")):
        return inherited
    base = inherited or os.path.join(tempfile.gettempdir(), f"encdec-test-{os.getpid()}")
    run = f"{base}-{worker}" if worker else base
    if inherited and os.environ.get("REDIS_URL", "").startswith(f"unix://{inherited}/"):
        del os.environ["REDIS_URL"]  # the xdist controller's socket, which no Redis serves: this worker's own below
    os.environ["ENCDEC_TEST_RUN_DIR"] = run
    os.environ["ENCDEC_TEST_RUN_DIR_OWNER"] = str(os.getpid())
    os.makedirs(run, exist_ok=True)
    return run


_RUN = _run_dir()
# Each pytest process gets its own embedded Redis socket unless REDIS_URL points at a server;
# exporting it lets Celery worker processes started by the tests find the same Redis.
os.environ.setdefault("REDIS_URL", f"unix://{_RUN}/redis.sock")

from webapp.settings.base import *  # noqa: E402,F403
from webapp.settings.base import DATABASES  # noqa: E402
from webapp.settings.env import env_bool  # noqa: E402

DEBUG = False
ALLOWED_HOSTS = ["testserver", "127.0.0.1", "localhost"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast hashing in tests only
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Closed after each request in the tests' processes: a connection kept by a thread of the test process, a worker's or
# a web process's would outlive its test, and PostgreSQL drops no test database while one is open.
DATABASES["default"]["CONN_MAX_AGE"] = 0
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # A file, not memory: Celery worker processes started by the tests open the same database.
    DATABASES["default"]["TEST"] = {"NAME": os.path.join(_RUN, "test.sqlite3")}
# Served straight from the finders so the ASGI test server needs no collectstatic.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
# The door's budgets (webapp/realtime/door.py) are off unless a test turns them on (DOOR_LIMITS=1 in a web process's
# environment, or the setting): most tests open sockets and requests faster than any student, all from 127.0.0.1.
DOOR_LIMITS = env_bool("DOOR_LIMITS", False)
