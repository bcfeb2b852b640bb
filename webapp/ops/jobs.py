"""What every table of jobs shares (training jobs, experiment runs, the lesson's training comparisons): one set of
status words, so pages and sockets agree, and the fields and words of a job's row (abstract models: each app's table
keeps its own columns and migrations). Their lifecycle on the queue is webapp.ops.runs."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class JobStatus(models.TextChoices):
    QUEUED = "queued", _("queued")
    RUNNING = "running", _("running")
    SUCCEEDED = "succeeded", _("succeeded")
    FAILED = "failed", _("failed")
    CANCELLED = "cancelled", _("cancelled")


FINAL = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)  # it will not run again unless queued again
ACTIVE = (JobStatus.QUEUED, JobStatus.RUNNING)


class Job(models.Model):
    """A row a worker takes from a queue: who asked for it, its status, why it failed, when it was made and changed."""

    Status = JobStatus
    FINAL = FINAL
    ACTIVE = ACTIVE

    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.QUEUED)
    error = models.TextField(blank=True, help_text="Why the job failed, in one line.")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True

    @property
    def is_final(self) -> bool:
        return self.status in self.FINAL


class Run(Job):
    """A job that computes one result from its parameters and reports its progress (webapp.ops.runs.RunTable).

    A run is never cancelled: it takes seconds, and it ends succeeded or failed.
    """

    progress = models.FloatField(default=0.0, help_text="0..1")
    result = models.JSONField(null=True, blank=True)

    class Meta:
        abstract = True
