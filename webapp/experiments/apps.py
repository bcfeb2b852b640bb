from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ExperimentsConfig(AppConfig):
    name = "webapp.experiments"
    label = "experiments"
    verbose_name = _("Experiments")
