"""One experiment run: its parameters (unique by hash), progress and stored result."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from modelcore.experiments import KINDS
from webapp.core.jobs import JobStatus

# What each kind of run is called on the pages (modelcore names them in code).
KIND_LABELS = {"gradflow": _("gradients at initialisation"), "compare": _("paired training runs"),
               "drift": _("representation drift"), "norms": _("norm statistics")}


class ExperimentRun(models.Model):
    """A run of one experiment kind; asking for the same parameters again finds this row."""

    Status = JobStatus  # a run is never cancelled; it ends succeeded or failed
    # How the experiment pages word a status (the training pages use the words themselves).
    STATUS_LABELS = {JobStatus.QUEUED: _("Queued"), JobStatus.RUNNING: _("Running"), JobStatus.SUCCEEDED: _("Done"),
                     JobStatus.FAILED: _("Failed"), JobStatus.CANCELLED: _("cancelled")}

    kind = models.CharField(max_length=20, choices=[(k, KIND_LABELS.get(k, k)) for k in KINDS])
    params = models.JSONField(help_text="Canonical parameters: every value the result depends on.")
    params_key = models.CharField(max_length=64, unique=True, help_text="sha256 of kind + canonical parameters.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    progress = models.FloatField(default=0.0, help_text="0..1")
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    shipped = models.BooleanField(default=False, help_text="Copied from the results that ship with the app.")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "created_at"])]
        verbose_name = _("experiment run")
        verbose_name_plural = _("experiment runs")

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"

    @property
    def status_label(self) -> str:
        return str(self.STATUS_LABELS[self.status])

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)
