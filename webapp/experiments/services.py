"""Experiment runs: keyed by their parameters, queued on their own `experiments` queue, quota for non-admins."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from modelcore.experiments.spec import canonical_params
from webapp.accounts.roles import Role, has_role
from webapp.experiments.models import ExperimentRun
from webapp.experiments.pages import PAGES, SHIPPED_SEEDS, shipped_results, sweep_preset
from webapp.experiments.sweep_parts import sweep_shared
from webapp.ops.runs import QueuePlace, RunTable
from webapp.site_pages.redact import without_paths

RUN_TASK = "webapp.experiments.run"  # webapp.experiments.tasks.run_experiment_task, routed by its name


class QuotaExceeded(Exception):
    """A non-admin asked for more new runs than the daily quota allows."""


def daily_quota() -> int:
    """New runs a non-admin may start in 24 hours."""
    return settings.EXPERIMENTS_DAILY_QUOTA


def params_key(kind: str, params: dict[str, Any]) -> str:
    """sha256 of the kind and canonical parameters: equal exactly when the result would be."""
    text = json.dumps({"kind": kind, "params": canonical_params(kind, params)}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def experiment_quota_left(*, user: Any) -> int | None:
    """How many new runs this user may still start today; None for admins (no limit)."""
    if has_role(user, Role.ADMIN):
        return None
    since = timezone.now() - timedelta(days=1)
    used = ExperimentRun.objects.filter(owner=user, created_at__gte=since, shipped=False).count()
    return max(0, daily_quota() - used)


TYPICAL_RUN_S = 10.0  # the wait estimate's run time before any run has finished here
RECENT_RUNS = 20  # finished runs whose median time estimates the next ones'


def _typical_run_s() -> float:
    """The median time of the experiment runs that finished here lately (TYPICAL_RUN_S before any did)."""
    recent = ExperimentRun.objects.filter(shipped=False, status=ExperimentRun.Status.SUCCEEDED,
                                          started_at__isnull=False, finished_at__isnull=False)
    took = sorted((r.finished_at - r.started_at).total_seconds()
                  for r in recent.order_by("-finished_at").only("started_at", "finished_at")[:RECENT_RUNS])
    return took[len(took) // 2] if took else TYPICAL_RUN_S


# The runs' lifecycle (queue, feed, state, resend after a Redis restart): webapp.ops.runs. The students' runs share
# their `experiments` queue with the lesson's training comparisons; a queued run's place counts both.
RUNS = RunTable(model=ExperimentRun, task=RUN_TASK, group_prefix="experiment", noun="experiment run",
                # the student sees it; paths stay in the log
                error_text=lambda error: without_paths(f"{type(error).__name__}: {error}"), typical_s=_typical_run_s)
run_group = RUNS.group


def experiment_queue_place(*, run: ExperimentRun) -> QueuePlace | None:
    """A queued run's place among all the runs waiting for the experiments workers; None unless it is queued."""
    return RUNS.queue_place(run)


@dataclass
class Requested:
    run: ExperimentRun
    created: bool  # False: the stored (or already running) result for these parameters


def experiment_run_request(*, user: Any, kind: str, params: dict[str, Any]) -> Requested:
    """The run for these parameters: the stored one at once, else a new one queued (quota permitting)."""
    canonical = canonical_params(kind, params)
    key = params_key(kind, canonical)
    with transaction.atomic():
        run = ExperimentRun.objects.select_for_update().filter(params_key=key).first()
        if run is not None and run.status != ExperimentRun.Status.FAILED:
            return Requested(run, created=False)
        shipped = shipped_results().get(key)
        if run is None and shipped is not None:
            run = ExperimentRun.objects.create(
                kind=kind, params=canonical, params_key=key, status=ExperimentRun.Status.SUCCEEDED, progress=1.0,
                result=shipped, shipped=True, finished_at=timezone.now(),
            )
            return Requested(run, created=False)
        # One launch at a time per user, so two at once cannot both take the last run of the quota
        # (on PostgreSQL the count below would not see the other's uncommitted run).
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        left = experiment_quota_left(user=user)
        if left is not None and left <= 0:
            raise QuotaExceeded(f"You have used your {daily_quota()} experiment runs for today.")
        if run is None:
            run = ExperimentRun.objects.create(kind=kind, params=canonical, params_key=key, owner=user)
            RUNS.queue_on_commit(run)
        else:  # a failed run is tried again, now on this user's quota
            RUNS.requeue(run, owner=user)
    return Requested(run, created=True)


def experiment_result(*, kind: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """A finished result for these parameters: a stored row first, the shipped copy otherwise."""
    key = params_key(kind, params)
    row = ExperimentRun.objects.filter(params_key=key, status=ExperimentRun.Status.SUCCEEDED).only("result").first()
    if row is not None:
        return row.result
    return shipped_results().get(key)


def experiment_sweep_kept(*, comparison: str) -> dict[str, Any] | None:
    """A comparison's sweep of SHIPPED_SEEDS seeds (pages.sweep_preset), stored or shipped; None when none is."""
    return experiment_result(kind="sweep", params=sweep_preset(comparison, SHIPPED_SEEDS))


def experiment_page_results(*, page: str) -> dict[str, dict[str, Any] | None]:
    """Every result one page shows, by its name in PAGES (None where none is stored or shipped)."""
    return {name: experiment_result(kind=kind, params=params) for name, (kind, params) in PAGES[page].items()}


def experiment_run_execute(*, run_id: int) -> None:
    """Run a queued experiment in this (worker) process, reporting progress to the run's sockets; a sweep with more
    seeds than one worker's batch shares its parts with the other experiments workers (sweep_parts.py)."""
    def compute(kind: str, params: dict[str, Any], on_progress: Any) -> dict[str, Any]:
        if kind == "sweep":
            return sweep_shared(run_id=run_id, params=params, on_progress=on_progress)
        # The worker's side: torch loads here, never in the web process.
        from modelcore.experiments.catalog import run_experiment

        return run_experiment(kind, params, on_progress=on_progress)

    RUNS.execute(run_id, compute)
