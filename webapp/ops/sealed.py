"""Runs sealed while a class predicts them: nothing of such a run (its page, its panel, its socket's live losses) is
shown until the class's reveal, so a student cannot read the answer before committing to one.

The shared layer cannot know about classes: an app that asks questions about runs registers a check
(`seal_check(fn)`, fn(model, run_id) -> bool: the classroom's, while an open question of a live session predicts the
run), and every page and socket that shows a run asks `is_sealed(run)` first.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

_checks: list[Callable[[type, int], bool]] = []


def seal_check(check: Callable[[type, int], bool]) -> None:
    """Register a check: (the run's model class, its id) -> whether it is sealed now."""
    if check not in _checks:
        _checks.append(check)


def is_sealed(run: Any) -> bool:
    """Whether any registered check seals this run (a row of a `webapp.ops.jobs.Run` table), in a thread."""
    return any(check(type(run), run.pk) for check in _checks)
