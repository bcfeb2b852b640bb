from __future__ import annotations

from django.urls import path

from webapp.lesson import views

app_name = "lesson"
urlpatterns = [
    path("", views.overview, name="overview"),
    path("encoder/", views.encoder, name="encoder"),
    path("decoder/", views.decoder, name="decoder"),
    path("residual-norm/", views.residual_norm, name="residual_norm"),
    path("questions/", views.questions, name="questions"),
    path("glossary/", views.glossary, name="glossary"),
    path("parts/<slug:page>/", views.part, name="part_top"),
    path("parts/<slug:page>/<slug:part>/", views.part, name="part"),
    path("demo/<slug:kind>/", views.demo, name="demo"),
    path("train/<slug:kind>/", views.train, name="train"),
    path("runs/<int:run_id>/", views.run_status, name="run"),
    path("runs/<int:run_id>/queue/", views.run_queue, name="run_queue"),
    path("exercises/<slug:exercise_id>/reveal/", views.reveal, name="reveal"),
    path("progress/", views.progress, name="progress"),
]
