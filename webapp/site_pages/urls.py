from __future__ import annotations

from django.urls import path

from webapp.site_pages import views

app_name = "site_pages"
urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
]
