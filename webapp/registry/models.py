"""Trained models the class can decode with: shipped ones and those the admins train."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


def unknown_model_text(name: str) -> str:
    """What a user who named a model they cannot use is told (a decode's or a session's `unknown_model`)."""
    return f"no model named {name[:80]!r} is available to you"


class TrainedModel(models.Model):
    """A model folder (config.json, model.safetensors, tokenizer.json, metrics.json) and what we know of it."""

    name = models.SlugField(max_length=80, unique=True, help_text="Stable identifier used by sockets and the CLI.")
    title = models.CharField(max_length=200, blank=True)
    task = models.CharField(max_length=80, help_text="The task or dataset it was trained on, e.g. zh-en.")
    description = models.TextField(blank=True)
    config = models.JSONField(default=dict, help_text="The ModelConfig it was built with.")
    metrics = models.JSONField(default=dict, help_text="Test-set figures and training history from metrics.json.")
    path = models.CharField(max_length=500, help_text="Its folder: absolute, or relative to MODEL_STORE.")
    checkpoint_hash = models.CharField(max_length=64, help_text="sha256 of model.safetensors.")
    size_bytes = models.PositiveBigIntegerField(default=0)
    shipped = models.BooleanField(default=False, help_text="Ships with the project (modelcore/shipped).")
    published = models.BooleanField(default=False, help_text="Students see and decode published models only.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-published", "task", "name"]
        verbose_name = _("trained model")
        verbose_name_plural = _("trained models")

    def __str__(self) -> str:
        return self.title or self.name

    @property
    def folder(self) -> Path:
        path = Path(self.path)
        return path if path.is_absolute() else Path(settings.MODEL_STORE) / path

    def job_fields(self) -> dict[str, str]:
        """The model as a worker's job carries it (a decode, a lesson demonstration): name, folder, hash."""
        return {"name": self.name, "path": str(self.folder), "hash": self.checkpoint_hash}

    @property
    def headline_metrics(self) -> dict[str, float]:
        """The test-set figures a user compares models by."""
        test = self.metrics.get("test", self.metrics)
        keys = ("bleu", "exact_match", "token_accuracy")
        return {key: test[key] for key in keys if isinstance(test.get(key), (int, float))}
