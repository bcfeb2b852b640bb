"""URL routes of EncDec Lab."""
from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("", include("webapp.site_pages.urls")),
    path("accounts/", include("webapp.accounts.urls")),
    path("classroom/", include("webapp.classroom.urls")),
    path("experiments/", include("webapp.experiments.urls")),
    path("lesson/", include("webapp.lesson.urls")),
    path("models/", include("webapp.registry.urls")),
    path("playground/", include("webapp.playground.urls")),
    path("training/", include("webapp.training.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
]
