from __future__ import annotations

from pathlib import Path

from django import forms
from django.conf import settings
from django.contrib import admin

from webapp.registry.models import TrainedModel


def model_folder_allowed(path: str) -> bool:
    """A model folder lies inside the model store or the shipped models, after resolving links and '..'."""
    from modelcore.folder import SHIPPED_DIR

    folder = Path(path) if Path(path).is_absolute() else Path(settings.MODEL_STORE) / path
    resolved = folder.resolve()
    return any(resolved.is_relative_to(Path(root).resolve()) for root in (settings.MODEL_STORE, SHIPPED_DIR))


class TrainedModelForm(forms.ModelForm):
    class Meta:
        model = TrainedModel
        fields = "__all__"

    def clean_path(self) -> str:
        path = self.cleaned_data["path"]
        if not model_folder_allowed(path):
            raise forms.ValidationError("A model folder must lie inside the model store (MODEL_STORE).")
        return path


@admin.register(TrainedModel)
class TrainedModelAdmin(admin.ModelAdmin):
    form = TrainedModelForm
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
