"""/ws/experiments/<id>/: the run's state on connect, then its progress frames live (webapp.core.run_socket)."""
from __future__ import annotations

from webapp.core.run_socket import RunSocket
from webapp.experiments.services import RUNS


class ExperimentSocket(RunSocket):
    """Any signed-in user may watch a run (results are shared: they are keyed by parameters, not owners)."""

    runs = RUNS
