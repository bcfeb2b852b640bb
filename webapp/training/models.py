"""Training jobs the admins queue, and the parallel corpora they upload to train on."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import models
from django.db.models import F, TextField, Value
from django.db.models.functions import Concat
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from webapp.ops.jobs import Job, JobStatus


class Dataset(models.Model):
    """An uploaded parallel corpus (UTF-8 TSV, source<TAB>target), checked line by line before it was stored."""

    name = models.CharField(max_length=100, unique=True)
    original_filename = models.CharField(max_length=255, blank=True)
    path = models.CharField(max_length=500, help_text="The TSV file, relative to MODEL_STORE.")
    sha256 = models.CharField(max_length=64)
    size_bytes = models.PositiveBigIntegerField(default=0)
    n_pairs = models.PositiveIntegerField(default=0, help_text="Non-blank lines (pairs) in the file.")
    n_train = models.PositiveIntegerField(default=0)
    n_valid = models.PositiveIntegerField(default=0)
    n_test = models.PositiveIntegerField(default=0)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("dataset")
        verbose_name_plural = _("datasets")

    def __str__(self) -> str:
        return self.name

    @property
    def file(self) -> Path:
        return Path(settings.MODEL_STORE) / self.path


class TrainingJob(Job):
    """One training run: what to train, how it is going, and the model it produced."""

    task = models.CharField(max_length=40, blank=True, help_text="A built-in task (modelcore.tasks), or blank.")
    dataset = models.ForeignKey(Dataset, null=True, blank=True, on_delete=models.PROTECT)
    config = models.JSONField(help_text='{"train": TrainConfig fields, "task_options": {...}}')
    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.QUEUED,
                              db_index=True)  # Job's, indexed: the queue and the nav badge read it
    step = models.PositiveIntegerField(default=0)
    steps = models.PositiveIntegerField(default=0)
    history = models.JSONField(default=list, blank=True, help_text="Loss curve: [{step, loss, lr}, ...].")
    evals = models.JSONField(default=list, blank=True, help_text="Validation figures: [{step, bleu, ...}, ...].")
    result = models.JSONField(default=dict, blank=True, help_text="Final validation and test figures.")
    log = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Runs started since it was last queued.")
    resumed_from_step = models.PositiveIntegerField(null=True, blank=True)
    celery_id = models.CharField(max_length=64, blank=True)
    # The lease: only the run named here may train this job, and only until it expires (renewed while alive).
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)
    preempt_requested = models.BooleanField(default=False, help_text="Its worker is shutting down: checkpoint, requeue.")
    model = models.ForeignKey("registry.TrainedModel", null=True, blank=True, on_delete=models.SET_NULL)
    queued_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "queued_at"])]
        verbose_name = _("training job")
        verbose_name_plural = _("training jobs")

    def __str__(self) -> str:
        return f"job {self.pk} ({self.source_label}, {self.status})"

    @property
    def source_label(self) -> str:
        return self.task or (f"dataset {self.dataset.name}" if self.dataset_id else "?")

    @property
    def progress(self) -> float:
        """Fraction of the steps done, 0..1."""
        return min(1.0, self.step / self.steps) if self.steps else 0.0

    @property
    def percent(self) -> int:
        return 100 if self.status == self.Status.SUCCEEDED else int(self.progress * 100)

    @property
    def folder(self) -> Path:
        """Where its checkpoints and, in the end, its model live."""
        return Path(settings.MODEL_STORE) / "jobs" / str(self.pk)

    def log_tail(self, lines: int = 40) -> list[str]:
        return [line for line in self.log.splitlines() if line][-lines:]


def log_line(line: str) -> Concat:
    """An UPDATE expression that appends one time-stamped line to a job's log."""
    return Concat(F("log"), Value(f"\n{timezone.now():%H:%M:%S} {line}"), output_field=TextField())
