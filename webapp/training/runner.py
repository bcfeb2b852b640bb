"""Running a job on a worker: take the lease, train (resuming from a checkpoint), and say how it ended."""
from __future__ import annotations

import json
import logging
import shutil
import traceback

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from modelcore.checkpoint import remove_train_state, train_state_step
from modelcore.training import train
from webapp.registry.services import model_register_folder
from webapp.training.dispatch import job_dispatch
from webapp.training.feed import job_announce
from webapp.training.lease import Claim, lease_owner_name, lease_release, lease_take
from webapp.training.models import TrainingJob, log_line
from webapp.training.session import LeaseLost, RunCancelled, RunSession
from webapp.training.spec import job_model_name, job_model_title, job_task, job_train_config

log = logging.getLogger(__name__)
Status = TrainingJob.Status
MARKER_FILE = "job.json"  # ties a folder to its job, so a reused id never resumes a stranger's checkpoint


def job_run(*, job_id: int, seen_lease: str | None = None, worker: str = "") -> str:
    """Run or resume one job under its lease; returns what happened (for the worker's log)."""
    owner = lease_owner_name(worker)
    claim = lease_take(job_id=job_id, owner=owner, seconds=settings.TRAINING_LEASE_SECONDS,
                       max_attempts=settings.TRAINING_MAX_ATTEMPTS)
    if claim.outcome in ("missing", "final"):
        return f"job {job_id}: {claim.outcome}, nothing to do"
    if claim.outcome == "held":
        return _wait_for_lease(claim, seen_lease)
    if claim.outcome == "exhausted":
        return _fail_exhausted(claim.job)
    return _run_under_lease(claim.job, owner, worker)


def _wait_for_lease(claim: Claim, seen_lease: str | None) -> str:
    """Another run holds the lease: if it renewed it since we last looked, it lives; else look again later."""
    job, expires = claim.job, claim.expires_at
    if seen_lease is not None and seen_lease != expires.isoformat():
        return f"job {job.pk}: a live run holds it; this delivery was a duplicate"
    countdown = max(1.0, (expires - timezone.now()).total_seconds() + 1.0)
    job_dispatch(job=job, countdown=countdown, seen_lease=expires.isoformat())
    return f"job {job.pk}: lease held until {expires:%H:%M:%S}; looking again in {countdown:.0f}s"


def _fail_exhausted(job: TrainingJob) -> str:
    reason = (f"the worker running this job died during each of its {job.attempts} attempts (last seen at step "
              f"{job.step}); Retry resumes from the last checkpoint")
    failed = TrainingJob.objects.filter(id=job.pk, status__in=TrainingJob.ACTIVE).update(
        status=Status.FAILED, error=reason, finished_at=timezone.now(), lease_owner="", lease_expires_at=None,
        log=log_line(f"failed: {reason}"))
    if failed:
        job_announce(job_id=job.pk, owner_id=job.owner_id, status=Status.FAILED, error=reason)
    return f"job {job.pk}: failed, {reason}"


def _run_under_lease(job: TrainingJob, owner: str, worker: str) -> str:
    session = RunSession(job=job, owner=owner, lease_seconds=settings.TRAINING_LEASE_SECONDS)
    session.log(f"attempt {job.attempts} of {settings.TRAINING_MAX_ATTEMPTS} started on {worker or owner}")
    if job.cancel_requested:
        return _finish(session, job, Status.CANCELLED, "cancelled before it started")
    session.start()
    session.status_frame(Status.RUNNING)
    try:
        _claim_folder(job)
        task, config = job_task(job), job_train_config(job)
        resumed = train_state_step(job.folder)
        if resumed is not None:
            session.resume_from(resumed)
            session.log(f"resuming from the checkpoint at step {resumed}")
            TrainingJob.objects.filter(id=job.pk, lease_owner=owner).update(resumed_from_step=resumed)
        result = train(task, job.folder, config, on_step=session.on_step, should_stop=session.should_stop)
    except RunCancelled as stop:
        return _finish(session, job, Status.CANCELLED, str(stop))
    except LeaseLost as lost:
        session.close()
        return str(lost)
    except Exception as exc:  # any error ends the job as failed, with its reason on the job's page
        session.log(traceback.format_exc(limit=8).rstrip())
        return _finish(session, job, Status.FAILED, f"{type(exc).__name__}: {exc}")
    if result.stopped:
        return _requeue(session, job)
    model = model_register_folder(folder=job.folder, name=job_model_name(job), task=job.task or job.source_label,
                                  title=job_model_title(job), published=False, created_by=job.owner)
    outcome = _finish(session, job, Status.SUCCEEDED, "", model=model,
                      result={k: result.metrics[k] for k in ("valid", "test") if k in result.metrics})
    remove_train_state(job.folder)  # about three times the model's size, and no use once the job is done
    return outcome


def _finish(session: RunSession, job: TrainingJob, status: str, reason: str, **extra: object) -> str:
    """Write the run's last word (only while it still holds the lease) and tell the watchers."""
    if status == Status.SUCCEEDED:
        session.log("finished: " + ", ".join(f"{k} {v:.4g}" for k, v in _test_figures(extra).items()))
    elif status == Status.CANCELLED:
        session.log(reason)
    else:
        session.log(f"failed: {reason}")
    session.close()
    fields = session.fields()
    if status == Status.SUCCEEDED:
        fields["step"] = session.steps
    if not lease_release(job_id=job.pk, owner=session.owner, status=status, error=reason if status == Status.FAILED else "",
                         finished_at=timezone.now(), **fields, **extra):
        return f"job {job.pk}: lease lost before it could be marked {status}"
    job_announce(job_id=job.pk, owner_id=job.owner_id, status=status, error=reason if status == Status.FAILED else "",
                 model=getattr(extra.get("model"), "name", None))
    return f"job {job.pk}: {status} {reason}".rstrip()


def _requeue(session: RunSession, job: TrainingJob) -> str:
    """The worker is shutting down: the trainer wrote a checkpoint; queue the job again (not an attempt)."""
    session.log(f"worker shutting down: checkpoint at step {session.step}, queued again")
    session.close()
    if not lease_release(job_id=job.pk, owner=session.owner, status=Status.QUEUED, attempts=F("attempts") - 1,
                         preempt_requested=False, queued_at=timezone.now(), **session.fields()):
        return f"job {job.pk}: lease lost while requeueing"
    job_dispatch(job=job)
    job_announce(job_id=job.pk, owner_id=job.owner_id, status=Status.QUEUED)
    return f"job {job.pk}: preempted at step {session.step}, queued again"


def _test_figures(extra: dict[str, object]) -> dict[str, float]:
    test = (extra.get("result") or {}).get("test", {})
    return {k: test[k] for k in ("bleu", "exact_match", "token_accuracy") if k in test}


def _claim_folder(job: TrainingJob) -> None:
    """Make job.folder this job's: a folder left by another job of the same id (a reset database) moves aside."""
    marker = {"job": job.pk, "created_at": job.created_at.isoformat()}
    path = job.folder / MARKER_FILE
    if job.folder.exists():
        try:
            if json.loads(path.read_text(encoding="utf-8")) == marker:
                return
        except (FileNotFoundError, ValueError):
            pass
        stale = job.folder.with_name(f"{job.folder.name}.stale-{timezone.now():%Y%m%d%H%M%S}")
        shutil.move(job.folder, stale)
        log.warning("moved a folder left by an earlier job %s to %s", job.pk, stale)
    job.folder.mkdir(parents=True)
    path.write_text(json.dumps(marker), encoding="utf-8")
