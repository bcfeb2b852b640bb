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
