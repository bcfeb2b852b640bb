from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RegistryConfig(AppConfig):
    name = "webapp.registry"
    label = "registry"
    verbose_name = _("Model registry")
