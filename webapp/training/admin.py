from __future__ import annotations

from django.contrib import admin

from webapp.training.models import Dataset, TrainingJob


@admin.register(TrainingJob)
class TrainingJobAdmin(admin.ModelAdmin):
    list_display = ("id", "task", "dataset", "status", "step", "steps", "attempts", "owner", "created_at")
    list_filter = ("status", "task")
    search_fields = ("task", "dataset__name", "error", "celery_id")
    readonly_fields = ("celery_id", "lease_owner", "lease_expires_at", "created_at", "updated_at", "started_at",
                       "finished_at", "resumed_from_step", "model")
    raw_id_fields = ("owner", "dataset")
    # The order of the model's own fields (those of webapp.ops.jobs.Job would come first).
    fields = ("owner", "task", "dataset", "config", "status", "step", "steps", "history", "evals", "result", "log", "error",
              "attempts", "cancel_requested", "preempt_requested", "queued_at", *readonly_fields)


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ("name", "n_pairs", "size_bytes", "owner", "created_at")
    search_fields = ("name", "original_filename")
    readonly_fields = ("path", "sha256", "size_bytes", "n_pairs", "n_train", "n_valid", "n_test", "created_at")
