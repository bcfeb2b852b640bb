"""/ws/lesson/runs/<id>/: a training comparison's state on connect, then its progress frames live.

The experiment runs' socket (webapp.ops.run_socket) on the lesson's run table: the same frames, the same rights.
"""
from __future__ import annotations

from webapp.lesson.services import RUNS
from webapp.ops.run_socket import RunSocket


class TrainingRunSocket(RunSocket):
    """Any signed-in user may watch a run (one run per comparison, shared by the class)."""

    runs = RUNS
