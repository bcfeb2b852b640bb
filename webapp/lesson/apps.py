from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class LessonConfig(AppConfig):
    name = "webapp.lesson"
    verbose_name = _("Lesson")
    default_auto_field = "django.db.models.BigAutoField"
