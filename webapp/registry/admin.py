from __future__ import annotations

from django.contrib import admin

from webapp.registry.models import TrainedModel


@admin.register(TrainedModel)
class TrainedModelAdmin(admin.ModelAdmin):
    list_display = ("name", "task", "published", "shipped", "size_bytes", "created_at")
    list_filter = ("published", "shipped", "task")
    search_fields = ("name", "title", "task")
    readonly_fields = ("checkpoint_hash", "size_bytes", "created_at", "updated_at")
    actions = ("publish", "unpublish")

    @admin.action(description="Publish the selected models to the class")
    def publish(self, request, queryset) -> None:
        queryset.update(published=True)

    @admin.action(description="Unpublish the selected models")
    def unpublish(self, request, queryset) -> None:
        queryset.update(published=False)
