"""One run of a job inside a worker: the step callbacks, the heartbeat that keeps the lease, the live feed.

The training loop calls `on_step` and `should_stop` every step; they only touch memory. A heartbeat thread
renews the lease every `beat` seconds, saves progress (step, curves, log) with it, and reads back the
cancel and preempt flags the web process sets, so a cancel is seen within one beat.
"""
from __future__ import annotations

import logging
import math
import threading
from typing import Any

from django.db import close_old_connections, connection
from django.utils import timezone

from modelcore.training import StepInfo
from webapp.training.feed import JobFeed, owner_payload
from webapp.training.lease import lease_renew
from webapp.training.models import TrainingJob

logger = logging.getLogger(__name__)

LOG_LINES = 400  # the job keeps this many log lines
HISTORY_POINTS = 500  # about this many loss points per job, however many steps it has


class RunCancelled(Exception):
    """An admin cancelled the job: the run stops at once and writes nothing more."""


class LeaseLost(Exception):
    """Another run took this job over (this one stalled past its lease): stop without touching the job."""


class TrainingDiverged(RuntimeError):
    """The loss is no longer a finite number."""


class RunSession:
    """The state one run shares between the training loop, its heartbeat and the finishing code."""

    def __init__(self, *, job: TrainingJob, owner: str, lease_seconds: float) -> None:
        self.job_id, self.owner, self.lease_seconds = job.pk, owner, lease_seconds
        self.owner_id = job.owner_id
        self.steps = job.config["train"]["steps"]
        self.checkpoint_every = job.config["train"].get("checkpoint_every", 0)
        self.every = max(1, self.steps // HISTORY_POINTS)
        self.log_every = max(1, self.steps // 20)
        self.step = job.step
        self.history: list[dict[str, Any]] = list(job.history)
        self.evals: list[dict[str, Any]] = list(job.evals)
        self.lines: list[str] = job.log_tail(LOG_LINES)
        self.cancel, self.preempt, self.lost = threading.Event(), threading.Event(), threading.Event()
        self.beat = min(2.0, max(0.2, lease_seconds / 4))
        self.feed = JobFeed(job_id=job.pk, owner_id=job.owner_id)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._heartbeat = threading.Thread(target=self._beat_loop, name=f"heartbeat-{job.pk}", daemon=True)

    # -- the training loop's side -------------------------------------------------------------------

    def on_step(self, info: StepInfo) -> None:
        if not math.isfinite(info.loss):
            raise TrainingDiverged(f"the loss became {info.loss} at step {info.step}; try a lower learning rate")
        with self._lock:
            self.step = info.step
            if info.step % self.every == 0 or info.step in (1, info.steps):
                self.history.append({"step": info.step, "loss": round(info.loss, 5), "lr": info.lr})
            if info.eval is not None:
                self.evals.append(_rounded(info.eval))
        frame = {
            "type": "step", "step": info.step, "steps": info.steps, "loss": info.loss, "lr": info.lr,
            "grad_norm": info.grad_norm, "tokens_per_s": round(info.tokens_per_s), "progress": info.step / info.steps,
        }
        if info.eval is not None:
            frame["eval"] = _rounded(info.eval)
        self.feed.step(frame, force=info.eval is not None or info.step == info.steps)
        if info.eval is not None:
            figures = ", ".join(f"{k} {v:.4g}" for k, v in info.eval.items() if k not in ("step", "n"))
            self.log(f"step {info.step}: validation {figures}")
        elif info.step % self.log_every == 0:
            self.log(f"step {info.step}/{info.steps}: loss {info.loss:.4f}, lr {info.lr:.2e}")
        if self.checkpoint_every and info.step % self.checkpoint_every == 0 and info.step < info.steps:
            self.log(f"step {info.step}: checkpoint")

    def should_stop(self) -> bool:
        """Raise for a cancel or a lost lease; True (stop after a checkpoint) when the worker shuts down."""
        if self.lost.is_set():
            raise LeaseLost(f"job {self.job_id}: another run holds the lease")
        if self.cancel.is_set():
            raise RunCancelled(f"cancelled at step {self.step}")
        return self.preempt.is_set()

    # -- bookkeeping ------------------------------------------------------------------------------

    def log(self, line: str) -> None:
        stamped = f"{timezone.now():%H:%M:%S} {line}"
        with self._lock:
            self.lines = [*self.lines[-(LOG_LINES - 1):], stamped]
        self.feed.send({"type": "log", "line": stamped})

    def resume_from(self, step: int) -> None:
        """Forget what happened after the checkpoint: those steps are about to run again."""
        with self._lock:
            self.step = step
            self.history = [p for p in self.history if p["step"] <= step]
            self.evals = [e for e in self.evals if e.get("step", 0) <= step]

    def fields(self) -> dict[str, Any]:
        """Progress as TrainingJob fields, for the heartbeat and the final write."""
        with self._lock:
            return {"step": self.step, "history": list(self.history), "evals": list(self.evals),
                    "log": "\n".join(self.lines)}

    def status_frame(self, status: str, **extra: Any) -> None:
        """Tell the watchers and the owner's tabs that the job's status changed."""
        self.feed.send({"type": "status", "status": status, "step": self.step, "steps": self.steps, **extra})
        self.feed.notify_owner(self._owner_payload(status))

    def _owner_payload(self, status: str) -> dict[str, Any]:
        return owner_payload(owner_id=self.owner_id, job_id=self.job_id, status=status,
                             progress=self.step / self.steps if self.steps else 0)

    # -- the heartbeat ----------------------------------------------------------------------------

    def start(self) -> None:
        self._heartbeat.start()

    def close(self) -> None:
        """Stop the heartbeat (its last renewal stands until the finishing write) and drain the feed."""
        self._stop.set()
        if self._heartbeat.is_alive():
            self._heartbeat.join()
        self.feed.close()

    def _beat_loop(self) -> None:
        try:
            while not self._stop.wait(self.beat):
                self._beat()
        finally:
            connection.close()  # this thread's own connection

    def _beat(self) -> None:
        try:
            close_old_connections()
            if not lease_renew(job_id=self.job_id, owner=self.owner, seconds=self.lease_seconds, **self.fields()):
                self.lost.set()
                self._stop.set()
                return
            cancel, preempt = TrainingJob.objects.filter(id=self.job_id).values_list(
                "cancel_requested", "preempt_requested").get()
            if cancel:
                self.cancel.set()
            if preempt:
                self.preempt.set()
            self.feed.flush()
            self.feed.notify_owner(self._owner_payload(TrainingJob.Status.RUNNING))
        except Exception:  # the database away for a moment: the lease has slack for a few missed beats
            logger.warning("heartbeat of job %s failed", self.job_id, exc_info=True)


def _rounded(figures: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 5) if isinstance(v, float) else v for k, v in figures.items()}
