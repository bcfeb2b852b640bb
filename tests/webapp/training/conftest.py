"""A private model store for the training tests (tiny job configurations: tests.fixtures.training)."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def store(settings, tmp_path: Path) -> Path:
    """MODEL_STORE in this test's folder (worker processes get it through their environment)."""
    settings.MODEL_STORE = tmp_path / "store"
    settings.MODEL_STORE.mkdir()
    return settings.MODEL_STORE

