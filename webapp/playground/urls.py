from __future__ import annotations

from django.urls import path

from webapp.playground import views

app_name = "playground"
urlpatterns = [
    path("", views.playground, name="page"),
    path("model/", views.model_card, name="model_card"),
]
