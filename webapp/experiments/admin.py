from __future__ import annotations

from django.contrib import admin

from webapp.experiments.models import ExperimentRun


@admin.register(ExperimentRun)
class ExperimentRunAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "status", "progress", "owner", "shipped", "created_at", "finished_at")
    list_filter = ("kind", "status", "shipped")
    search_fields = ("params_key", "owner__username")
    readonly_fields = ("params_key", "created_at", "started_at", "finished_at", "updated_at")
    # The order of the model's own fields (those of webapp.ops.jobs.Run would come first).
    fields = ("kind", "params", "status", "progress", "result", "error", "shipped", "owner", *readonly_fields)
