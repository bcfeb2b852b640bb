"""The lease: at most one run of a job at a time, taken with a conditional UPDATE and renewed while it lives.

A run names itself in `lease_owner` and pushes `lease_expires_at` forward every few seconds. A worker
that dies stops renewing; once the lease lapses, the next delivery of the job takes it over and resumes
from the last checkpoint. Every write a run makes is conditional on still holding the lease, so a run
that lost it (frozen past its expiry) can no longer touch the job.
"""
from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from webapp.training.models import TrainingJob

Status = TrainingJob.Status


@dataclass(frozen=True)
class Claim:
    """What a delivery found: `taken` (run it), `held` (someone's lease is live), `final`, `exhausted`, `missing`."""

    outcome: str
    job: TrainingJob | None = None
    expires_at: datetime | None = None


def lease_owner_name(worker: str = "") -> str:
    """A name unique to this run: the worker's node name (or host), the process, a random suffix."""
    return f"{worker or socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


def lease_take(*, job_id: int, owner: str, seconds: float, max_attempts: int) -> Claim:
    """Take the job's lease if it is free and the job may run again; count the attempt."""
    now = timezone.now()
    free = Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now)
    taken = TrainingJob.objects.filter(free, id=job_id, status__in=TrainingJob.ACTIVE, attempts__lt=max_attempts).update(
        lease_owner=owner, lease_expires_at=now + timedelta(seconds=seconds), status=Status.RUNNING,
        attempts=F("attempts") + 1, started_at=Coalesce("started_at", now), preempt_requested=False,
    )
    job = TrainingJob.objects.filter(id=job_id).first()
    if job is None:
        return Claim("missing")
    if taken:
        return Claim("taken", job, job.lease_expires_at)
    if job.is_final:
        return Claim("final", job)
    if job.lease_expires_at is not None and job.lease_expires_at >= now:
        return Claim("held", job, job.lease_expires_at)
    return Claim("exhausted", job)


def lease_renew(*, job_id: int, owner: str, seconds: float, **fields: Any) -> bool:
    """Push the lease forward (and save `fields` with it); False when this run no longer holds it."""
    expires = timezone.now() + timedelta(seconds=seconds)
    return bool(TrainingJob.objects.filter(id=job_id, lease_owner=owner).update(lease_expires_at=expires, **fields))


def lease_release(*, job_id: int, owner: str, **fields: Any) -> bool:
    """Give the lease up, writing the run's last word (`fields`); False when it was no longer ours."""
    return bool(
        TrainingJob.objects.filter(id=job_id, lease_owner=owner).update(lease_owner="", lease_expires_at=None, **fields)
    )
