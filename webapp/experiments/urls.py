from __future__ import annotations

from django.urls import path

from webapp.experiments import views

app_name = "experiments"
urlpatterns = [
    path("", views.index, name="index"),
    path("norm-position/", views.norm_position, name="norm_position"),
    path("residuals/", views.residuals, name="residuals"),
    path("layernorm/", views.layernorm, name="layernorm"),
    path("launch/", views.launch, name="launch"),
    path("runs/<int:run_id>/", views.run_detail, name="run"),
    path("runs/<int:run_id>/result/", views.run_result, name="run_result"),
    path("runs/<int:run_id>/queue/", views.run_queue, name="run_queue"),
]
