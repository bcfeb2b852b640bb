"""/ws/experiments/<id>/: the run's state on connect, then its progress frames live (webapp.ops.run_socket)."""
from __future__ import annotations

from webapp.experiments.services import RUNS
from webapp.ops.run_socket import RunSocket


class ExperimentSocket(RunSocket):
    """Any signed-in user may watch a run (results are shared: they are keyed by parameters, not owners)."""

    runs = RUNS
