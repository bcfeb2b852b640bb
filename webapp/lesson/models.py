"""What the lesson keeps: each student's progress, demonstration results by request, and tiny training runs."""
from __future__ import annotations

from django.conf import settings
from django.db import models

from webapp.ops.jobs import Run


class PageProgress(models.Model):
    """One student's visits to one lesson page and the exercises they revealed there."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="lesson_progress")
    page = models.CharField(max_length=20)
    first_visit_at = models.DateTimeField(auto_now_add=True)
    last_visit_at = models.DateTimeField(auto_now=True)
    exercises = models.JSONField(default=list, help_text="Ids of the exercises whose answer the student revealed.")
    visited = models.BooleanField(default=True, help_text="The student opened the page (a reveal alone is no visit).")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "page"], name="lesson_progress_once_per_page")]
        ordering = ["user", "page"]


class DemoResult(models.Model):
    """A demonstration's result, keyed by everything it depends on: an identical request is answered from here."""

    key = models.CharField(max_length=64, unique=True, help_text="sha256 of kind, model, checkpoint and parameters.")
    kind = models.CharField(max_length=20)
    model_name = models.CharField(max_length=80)
    params = models.JSONField()
    result = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)
    used_at = models.DateTimeField(auto_now_add=True, db_index=True,
                                   help_text="Last asked for: the cache keeps the recently used (lesson.services).")


class TrainingRun(Run):
    """A tiny training comparison (mask / FFN width), shared by everyone who asks for the same parameters."""

    key = models.CharField(max_length=64, unique=True)
    kind = models.CharField(max_length=10)
    params = models.JSONField()
