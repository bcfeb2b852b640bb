from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ClassroomConfig(AppConfig):
    name = "webapp.classroom"
    label = "classroom"
    verbose_name = _("Classroom")
    default_auto_field = "django.db.models.BigAutoField"
