"""`make run` and local work: a throwaway secret unless one is given; debug pages only with DEBUG=1."""
from __future__ import annotations

import os

os.environ.setdefault("SECRET_KEY", "dev-only-insecure-key-do-not-use-in-production")

from webapp.settings.base import *  # noqa: E402,F403
from webapp.settings.base import DEBUG  # noqa: E402
from webapp.settings.env import env_list  # noqa: E402

# Off by default, so `make run` shows the app's own 404 page and serves collected static files (compressed,
# hashed names, cached for a year) as production does; DEBUG=1 brings the debug pages and static files
# served straight from static/ as they are edited.
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
if DEBUG:
    WHITENOISE_USE_FINDERS = True
    WHITENOISE_AUTOREFRESH = True
