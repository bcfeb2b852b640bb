"""/ws/lesson/runs/<id>/: a training comparison's state on connect, then its progress frames live.

The experiment runs' socket with the lesson's run table and group: the same frames, the same rights.
"""
from __future__ import annotations

from webapp.experiments.consumers import ExperimentSocket
from webapp.lesson.models import TrainingRun
from webapp.lesson.services import run_group


class TrainingRunSocket(ExperimentSocket):
    """Any signed-in user may watch a run (one run per comparison, shared by the class)."""

    model = TrainingRun
    run_group = staticmethod(run_group)
    noun = "lesson training run"
