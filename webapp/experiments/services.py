"""Experiment runs: keyed by their parameters, queued on their own `experiments` queue, quota for non-admins."""
from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import models, transaction
from django.utils import timezone

from modelcore.experiments.spec import canonical_params
from webapp.accounts.roles import Role, has_role
from webapp.celery import app
from webapp.core.broker import send_queued_again
from webapp.core.feed import Feed, group_frame
from webapp.core.jobs import JobStatus
from webapp.core.redact import without_paths
from webapp.experiments.models import ExperimentRun
from webapp.experiments.pages import PAGES, shipped_results

logger = logging.getLogger(__name__)
PROGRESS_EVERY_S = 0.25  # at most four progress frames (and database writes) a second per run
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


def run_group(run_id: int) -> str:
    """The channel-layer group every socket watching run `run_id` joins."""
    return f"experiment-{run_id}"


def experiment_quota_left(*, user: Any) -> int | None:
    """How many new runs this user may still start today; None for admins (no limit)."""
    if has_role(user, Role.ADMIN):
        return None
    since = timezone.now() - timedelta(days=1)
    used = ExperimentRun.objects.filter(owner=user, created_at__gte=since, shipped=False).count()
    return max(0, daily_quota() - used)


TYPICAL_RUN_S = 10.0  # the wait estimate's run time before any run has finished here
RECENT_RUNS = 20  # finished runs whose median time estimates the next ones'

# Other tables of runs sent to the `experiments` queue (the lesson's training comparisons), each with the seconds
# one of its runs takes: their app registers them (webapp/lesson/apps.py), since this app may not import theirs.
# Their queued and running rows count in every queued run's place and wait, as the worker takes them in turn.
QUEUE_SHARERS: dict[type[models.Model], float] = {}


def experiments_queue_share(*, model: type[models.Model], typical_s: float) -> None:
    """Count `model`'s queued and running rows (status and created_at as ExperimentRun's) in the queue's places."""
    QUEUE_SHARERS[model] = typical_s


@dataclass(frozen=True)
class QueuePlace:
    """Where a queued run stands: its place (1 = next), the runs ahead of it, and roughly how long it will wait."""

    place: int
    ahead: int
    wait_s: int


def _typical_run_s() -> float:
    """The median time of the experiment runs that finished here lately (TYPICAL_RUN_S before any did)."""
    recent = ExperimentRun.objects.filter(shipped=False, status=ExperimentRun.Status.SUCCEEDED,
                                          started_at__isnull=False, finished_at__isnull=False)
    took = sorted((r.finished_at - r.started_at).total_seconds()
                  for r in recent.order_by("-finished_at").only("started_at", "finished_at")[:RECENT_RUNS])
    return took[len(took) // 2] if took else TYPICAL_RUN_S


def experiment_queue_place(*, run: models.Model) -> QueuePlace | None:
    """A queued run's place among all the runs waiting for the experiments workers; None unless it is queued.

    `run` is an ExperimentRun or a row of a table in QUEUE_SHARERS: the queue hands out the runs of every
    table in the order they were sent, so a row of another table counts as ahead when it was created earlier.
    """
    if run.status != JobStatus.QUEUED:
        return None
    tables = [(ExperimentRun.objects.filter(shipped=False), _typical_run_s()),
              *((model.objects.all(), typical_s) for model, typical_s in QUEUE_SHARERS.items())]
    waiting = running = 0
    wait = 0.0
    for rows, typical_s in tables:
        before = {"pk__lt": run.pk} if rows.model is type(run) else {"created_at__lt": run.created_at}
        table_waiting = rows.filter(status=JobStatus.QUEUED, **before).count()
        table_running = rows.filter(status=JobStatus.RUNNING).count()
        waiting, running = waiting + table_waiting, running + table_running
        # One run at a time per worker: those running end in about half a run on average, then each waiting in turn.
        wait += (table_waiting + 0.5 * table_running) * typical_s
    wait /= max(1, settings.EXPERIMENTS_WORKERS)
    return QueuePlace(place=waiting + 1, ahead=waiting + running, wait_s=max(1, round(wait)))


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
        else:  # a failed run is tried again, now on this user's quota
            run.status, run.progress, run.error, run.result, run.owner = ExperimentRun.Status.QUEUED, 0.0, "", None, user
            run.save()
        run_id = run.pk
        transaction.on_commit(lambda: app.send_task(RUN_TASK, args=[run_id]))
    return Requested(run, created=True)


def experiments_resend_queued() -> int:
    """Send every queued run's message again (a worker reconnecting after Redis restarted empty lost them).

    A run whose message survived gets two; the second finds it ended and does nothing.
    """
    return send_queued_again(ExperimentRun.objects.filter(status=ExperimentRun.Status.QUEUED), RUN_TASK)


def experiment_result(*, kind: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """A finished result for these parameters: a stored row first, the shipped copy otherwise."""
    key = params_key(kind, params)
    row = ExperimentRun.objects.filter(params_key=key, status=ExperimentRun.Status.SUCCEEDED).only("result").first()
    if row is not None:
        return row.result
    return shipped_results().get(key)


def experiment_page_results(*, page: str) -> dict[str, dict[str, Any] | None]:
    """Every result one page shows, by its name in PAGES (None where none is stored or shipped)."""
    return {name: experiment_result(kind=kind, params=params) for name, (kind, params) in PAGES[page].items()}


def experiment_run_execute(*, run_id: int) -> None:
    """Run a queued experiment in this (worker) process, reporting progress to the run's sockets."""
    run = ExperimentRun.objects.get(pk=run_id)
    if run.status in (ExperimentRun.Status.SUCCEEDED, ExperimentRun.Status.FAILED):
        return  # delivered twice (acks_late, or sent again after a reconnect): the first delivery ended it
    run.status, run.started_at, run.progress = ExperimentRun.Status.RUNNING, timezone.now(), 0.0
    run.save(update_fields=["status", "started_at", "progress", "updated_at"])
    feed = Feed(name=run_group(run_id), interval=PROGRESS_EVERY_S)
    try:
        _execute(run, feed, run_group(run_id))
    finally:
        feed.close()


def _execute(run: ExperimentRun, feed: Feed, group: str) -> None:
    # The worker's side: torch loads here, never in the web process.
    from modelcore.experiments.catalog import run_experiment

    feed.send(group, group_frame({"type": "state", "status": run.status, "progress": 0.0}))
    try:
        result = run_experiment(run.kind, run.params, on_progress=_progress_reporter(run, feed, group))
    except Exception as error:  # a bad run must end marked failed, never stay "running"
        reported = without_paths(f"{type(error).__name__}: {error}")  # the student sees it; paths stay in the log
        run.status, run.error, run.finished_at = ExperimentRun.Status.FAILED, reported, timezone.now()
        run.save(update_fields=["status", "error", "finished_at", "updated_at"])
        feed.send(group, group_frame({"type": "failed", "message": run.error}))
        logger.exception("experiment run %s failed", run.pk)
        return
    run.status, run.result, run.progress, run.finished_at = ExperimentRun.Status.SUCCEEDED, result, 1.0, timezone.now()
    run.save(update_fields=["status", "result", "progress", "finished_at", "updated_at"])
    feed.send(group, group_frame({"type": "done", "status": run.status, "progress": 1.0}))


def _progress_reporter(run: ExperimentRun, feed: Feed, group: str) -> Any:
    """Progress frames through the feed's throttle; the run's row at most every PROGRESS_EVERY_S too."""
    saved = [0.0]

    eval_every = run.params.get("eval_every")

    def report(info: dict[str, Any]) -> None:
        progress = round(float(info.get("progress", 0.0)), 4)
        frame = {"type": "progress", "progress": progress, **{k: info[k] for k in ("arm", "step", "steps", "loss")
                                                               if k in info}}
        # The next step ends with an evaluation (seconds without a step): this frame goes out now, saying so.
        upcoming = info.get("step", 0) + 1
        evaluates_next = bool(eval_every and "steps" in info and (upcoming % eval_every == 0 or upcoming == info["steps"]))
        if evaluates_next:
            frame["evaluates_next"] = True
        feed.latest(group, group_frame(frame), force=progress >= 1 or evaluates_next)
        now = time.monotonic()
        if now - saved[0] >= PROGRESS_EVERY_S or progress >= 1:
            saved[0], run.progress = now, progress
            run.save(update_fields=["progress", "updated_at"])

    return report
