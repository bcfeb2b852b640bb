from __future__ import annotations

from django.apps import AppConfig


class ClassroomConfig(AppConfig):
    name = "webapp.classroom"
    label = "classroom"
    verbose_name = "Classroom"
    default_auto_field = "django.db.models.BigAutoField"
