"""pytest: a file SQLite test database (worker processes must see it) and a per-run embedded Redis."""
from __future__ import annotations

import os
import tempfile

os.environ.setdefault("SECRET_KEY", "test-only-insecure-key")
# Each pytest process gets its own embedded Redis socket unless REDIS_URL points at a server;
# exporting it lets Celery worker processes started by the tests find the same Redis.
_RUN = os.path.join(tempfile.gettempdir(), f"encdec-test-{os.getpid()}")
os.environ.setdefault("REDIS_URL", f"unix://{_RUN}/redis.sock")
os.environ.setdefault("ENCDEC_TEST_RUN_DIR", _RUN)
os.makedirs(_RUN, exist_ok=True)

from webapp.settings.base import *  # noqa: E402,F403
from webapp.settings.base import DATABASES  # noqa: E402

DEBUG = False
ALLOWED_HOSTS = ["testserver", "127.0.0.1", "localhost"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast hashing in tests only
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # A file, not memory: Celery worker processes started by the tests open the same database.
    DATABASES["default"]["TEST"] = {"NAME": os.path.join(_RUN, "test.sqlite3")}
# The playground relay's test hook (settings/base.py): drop each request's token frame of this seq.
PLAYGROUND_TEST_DROP_SEQ = int(os.environ["PLAYGROUND_TEST_DROP_SEQ"]) if "PLAYGROUND_TEST_DROP_SEQ" in os.environ else None
# Served straight from the finders so the ASGI test server needs no collectstatic.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
