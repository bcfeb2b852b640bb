from __future__ import annotations

from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class SitePagesConfig(AppConfig):
    """The site's own pages (home, /healthz), its admin site, and what every area's pages share."""

    default = True
    name = "webapp.site_pages"
    label = "site_pages"
    verbose_name = "Site pages"


class LabAdminConfig(admin_apps.AdminConfig):
    default = False
    """Django admin, with the app's role rules (see admin_site.py)."""

    default_site = "webapp.site_pages.admin_site.LabAdminSite"
