from __future__ import annotations

from django.apps import AppConfig


class RegistryConfig(AppConfig):
    name = "webapp.registry"
    label = "registry"
    verbose_name = "Model registry"
