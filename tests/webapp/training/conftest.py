"""Tiny jobs (seconds on one CPU thread), a private model store, an empty `training` queue."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.training import TINY_TASK_OPTIONS, tiny_config  # noqa: F401  (modules still importing them here)


@pytest.fixture
def store(settings, tmp_path: Path) -> Path:
    """MODEL_STORE in this test's folder (worker processes get it through their environment)."""
    settings.MODEL_STORE = tmp_path / "store"
    settings.MODEL_STORE.mkdir()
    return settings.MODEL_STORE

