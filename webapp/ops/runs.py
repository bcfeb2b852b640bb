"""One lifecycle for the runs a worker computes from a queue (experiment runs, the lesson's training comparisons).

A `RunTable` describes one table of runs (a `webapp.ops.jobs.Run` model) once: its Celery task and queue, the
channel-layer group of each run, its noun. Its app's services call it for each step of a run's life:

- queue: `queue_on_commit(run)` sends the task by name once the row is committed; `requeue(run)` takes a failed run
  back to queued (`task_send_on_commit` is the same send for any task, the training jobs' included);
- place: `queue_place(run)`, where a queued run stands among every table's runs waiting on the same queue;
- feed and status: `execute(run_id, compute)` runs it in the worker, with a `state` frame, throttled `progress`
  frames and `done` or `failed` to the run's group, its row saved as it goes; `state(run_id)` is the frame a
  socket (webapp.ops.run_socket.RunSocket) sends first;
- resend: `resend_on_connect()` (in the app's tasks module) has every worker of the queue send the queued runs
  again whenever it connects: a Redis that restarts empty has lost their messages.

A run is never cancelled. Training jobs (webapp/training/) share the status words and the row's fields
(webapp.ops.jobs.Job), the send on commit and the send again on connect; their lease, checkpoints, live feed and
cancel are their own.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from webapp.celery import app
from webapp.ops.broker import on_every_connect, send_queued_again
from webapp.ops.jobs import JobStatus, Run
from webapp.realtime.feed import Feed, group_frame

logger = logging.getLogger(__name__)
PROGRESS_EVERY_S = 0.25  # at most four progress frames (and database writes) a second per run
PROGRESS_KEYS = ("arm", "step", "steps", "loss")  # what a progress frame carries of the run's report
Compute = Callable[[str, dict[str, Any], Callable[[dict[str, Any]], None]], Any]  # (kind, params, on_progress)

TABLES: list[RunTable] = []  # every table of runs, in the order their modules made them


def task_send_on_commit(task: str, args: list[Any], *, queue: str | None = None, countdown: float | None = None,
                        kwargs: dict[str, Any] | None = None, sent: Callable[[Any], None] | None = None) -> None:
    """Send `task` by its name once the current transaction commits (at once outside one), so the worker finds the
    rows it is sent for; `sent` gets the AsyncResult. Without `queue`, the task's name routes it (webapp/celery.py)."""
    options = {key: value for key, value in (("queue", queue), ("countdown", countdown), ("kwargs", kwargs))
               if value is not None}

    def send() -> None:
        result = app.send_task(task, args=args, **options)
        if sent is not None:
            sent(result)

    transaction.on_commit(send)


@dataclass(frozen=True)
class QueuePlace:
    """Where a queued run stands: its place (1 = next), the runs ahead of it, and roughly how long it will wait."""

    place: int
    ahead: int
    wait_s: int


@dataclass(frozen=True, eq=False)
class RunTable:
    """One table of runs and everything its lifecycle needs to know about it."""

    model: type[Run]
    task: str  # the Celery task that computes one run, given its id
    group_prefix: str  # the channel-layer group of run N is "<group_prefix>-N"
    noun: str  # "experiment run": the log's and the socket's word for one
    error_text: Callable[[Exception], str]  # what the page says of a failed run (never the server's paths)
    queue: str = "experiments"
    typical_s: Callable[[], float] = field(default=lambda: 10.0)  # how long one run takes, for the queue's wait

    def __post_init__(self) -> None:
        TABLES.append(self)

    def group(self, run_id: int) -> str:
        """The channel-layer group every socket watching run `run_id` joins."""
        return f"{self.group_prefix}-{run_id}"

    # -- queue ----------------------------------------------------------------------------------------------------

    def queue_on_commit(self, run: Run) -> None:
        """Send the run's task once the transaction that made or changed its row commits."""
        task_send_on_commit(self.task, [run.pk], queue=self.queue)

    def requeue(self, run: Run, **fields: Any) -> None:
        """A failed run, queued again (with `fields` changed too) and sent on commit."""
        run.status, run.progress, run.error, run.result = JobStatus.QUEUED, 0.0, "", None
        for name, value in fields.items():
            setattr(run, name, value)
        run.save()
        self.queue_on_commit(run)

    def queue_place(self, run: Run) -> QueuePlace | None:
        """A queued run's place among all the runs of every table waiting on this queue; None unless it is queued.

        The queue hands out the runs of every table in the order they were sent, so a row of another table counts
        as ahead when it was created earlier. The queue's workers: the setting `<QUEUE>_WORKERS` (1 without one).
        """
        if run.status != JobStatus.QUEUED:
            return None
        waiting = running = 0
        wait = 0.0
        for table in (each for each in TABLES if each.queue == self.queue):
            rows = table.model.objects.all()
            before = {"pk__lt": run.pk} if table.model is type(run) else {"created_at__lt": run.created_at}
            table_waiting = rows.filter(status=JobStatus.QUEUED, **before).count()
            table_running = rows.filter(status=JobStatus.RUNNING).count()
            waiting, running = waiting + table_waiting, running + table_running
            # One run at a time per worker: those running end in about half a run on average, then each waiting.
            if table_waiting or table_running:
                wait += (table_waiting + 0.5 * table_running) * table.typical_s()
        wait /= max(1, getattr(settings, f"{self.queue.upper()}_WORKERS", 1))
        return QueuePlace(place=waiting + 1, ahead=waiting + running, wait_s=max(1, round(wait)))

    # -- resend ---------------------------------------------------------------------------------------------------

    def resend_queued(self) -> int:
        """Send every queued run's message again (a worker reconnecting after Redis restarted empty lost them).

        A run whose message survived gets two; the second finds it running or ended and does nothing.
        """
        return send_queued_again(self.model.objects.filter(status=JobStatus.QUEUED), self.task, self.queue)

    def resend_on_connect(self) -> None:
        """Each worker of the queue sends the queued runs again whenever it connects to the broker (tasks modules)."""
        on_every_connect(app, self.queue, self.resend_queued, f"send queued {self.noun}s again", key=self.task)

    # -- status ---------------------------------------------------------------------------------------------------

    def state(self, run_id: int) -> dict[str, Any] | None:
        """The run as a socket's first frame; None when there is no such run."""
        run = self.model.objects.filter(pk=run_id).only("status", "progress", "error", "kind").first()
        if run is None:
            return None
        return {"type": "state", "id": run_id, "kind": run.kind, "status": run.status, "progress": run.progress,
                "error": run.error}

    # -- feed: the worker's side ----------------------------------------------------------------------------------

    def execute(self, run_id: int, compute: Compute) -> None:
        """Compute a queued run in this (worker) process: `compute(kind, params, on_progress)` gives its result.

        Its sockets get a `state` frame, `progress` frames (at most every PROGRESS_EVERY_S, the last always) and
        `done` or `failed`; its row follows (running, progress, then succeeded with the result, or failed with
        `error_text(error)`). A run delivered again after it ended (acks_late, a resend) is left as it is.
        """
        run = self.model.objects.get(pk=run_id)
        if run.status in (JobStatus.SUCCEEDED, JobStatus.FAILED):
            return
        self._save(run, status=JobStatus.RUNNING, started_at=timezone.now(), progress=0.0)
        group = self.group(run_id)
        feed = Feed(name=group, interval=PROGRESS_EVERY_S)
        try:
            feed.send(group, group_frame({"type": "state", "status": run.status, "progress": 0.0}))
            try:
                result = compute(run.kind, run.params, self.progress_reporter(run, feed))
            except Exception as error:  # a bad run must end marked failed, never stay "running"
                logger.exception("%s %s failed", self.noun, run.pk)
                self._save(run, status=JobStatus.FAILED, error=self.error_text(error), finished_at=timezone.now())
                feed.send(group, group_frame({"type": "failed", "message": run.error}))
                return
            self._save(run, status=JobStatus.SUCCEEDED, result=result, progress=1.0, finished_at=timezone.now())
            feed.send(group, group_frame({"type": "done", "status": run.status, "progress": 1.0}))
        finally:
            feed.close()

    def progress_reporter(self, run: Run, feed: Feed) -> Callable[[dict[str, Any]], None]:
        """Progress frames through the feed's throttle; the run's row at most every PROGRESS_EVERY_S too.

        The frame before an evaluation (seconds without a step, when the run's params have `eval_every`) goes out
        at once and says so (`evaluates_next`), as does the last.
        """
        group, saved = self.group(run.pk), [0.0]
        eval_every = run.params.get("eval_every")

        def report(info: dict[str, Any]) -> None:
            progress = round(float(info.get("progress", 0.0)), 4)
            frame = {"type": "progress", "progress": progress, **{k: info[k] for k in PROGRESS_KEYS if k in info}}
            upcoming = info.get("step", 0) + 1
            if eval_every and "steps" in info and (upcoming % eval_every == 0 or upcoming == info["steps"]):
                frame["evaluates_next"] = True
            feed.latest(group, group_frame(frame), force=progress >= 1 or "evaluates_next" in frame)
            now = time.monotonic()
            if now - saved[0] >= PROGRESS_EVERY_S or progress >= 1:
                saved[0] = now
                self._save(run, progress=progress)

        return report

    def _save(self, run: Run, **fields: Any) -> None:
        """Set and save these fields of the run (those its table has: not every table keeps start and end times)."""
        names = [name for name in fields if name in _field_names(type(run))]
        for name in names:
            setattr(run, name, fields[name])
        run.save(update_fields=[*names, "updated_at"])


def _field_names(model: type[Run]) -> set[str]:
    return {each.name for each in model._meta.concrete_fields}
