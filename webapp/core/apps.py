from __future__ import annotations

from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class CoreConfig(AppConfig):
    default = True
    name = "webapp.core"
    label = "core"
    verbose_name = "Core"


class LabAdminConfig(admin_apps.AdminConfig):
    default = False
    """Django admin, with the app's role rules (see admin_site.py)."""

    default_site = "webapp.core.admin_site.LabAdminSite"
