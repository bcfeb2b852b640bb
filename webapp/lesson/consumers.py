"""/ws/lesson/runs/<id>/: a training comparison's state on connect, then its progress frames live.

The experiment runs' socket (webapp.core.run_socket) on the lesson's run table: the same frames, the same rights.
"""
from __future__ import annotations

from webapp.core.run_socket import RunSocket
from webapp.lesson.services import RUNS


class TrainingRunSocket(RunSocket):
    """Any signed-in user may watch a run (one run per comparison, shared by the class)."""

    runs = RUNS
