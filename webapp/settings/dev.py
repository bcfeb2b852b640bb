"""Local development and `make run`: debug on, a throwaway secret unless one is given."""
from __future__ import annotations

import os

os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("SECRET_KEY", "dev-only-insecure-key-do-not-use-in-production")

from webapp.settings.base import *  # noqa: E402,F403

WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
