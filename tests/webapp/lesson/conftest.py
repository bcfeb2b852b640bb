"""Fixtures of the lesson's tests."""
from __future__ import annotations

import pytest

from tests.webapp.lesson.seats import seat


@pytest.fixture
def seated():
    """seat(student, instructor): the student joins a live session of the instructor (False without a classroom)."""
    return seat
