from __future__ import annotations

from django.urls import path

from webapp.registry import views

app_name = "registry"
urlpatterns = [
    path("", views.model_list, name="list"),
    path("<slug:name>/", views.model_detail, name="detail"),
    path("<slug:name>/publish/", views.model_publish, name="publish"),
    path("<slug:name>/knows/", views.model_knows, name="knows"),
]
