from __future__ import annotations

from django.urls import path

from webapp.training import views

app_name = "training"
urlpatterns = [
    path("", views.job_list, name="list"),
    path("rows/", views.job_rows, name="rows"),
    path("new/", views.job_new, name="new"),
    path("jobs/<int:job_id>/", views.job_detail, name="job"),
    path("jobs/<int:job_id>/cancel/", views.job_cancel_view, name="cancel"),
    path("jobs/<int:job_id>/retry/", views.job_retry_view, name="retry"),
    path("jobs/<int:job_id>/keep/", views.job_keep_view, name="keep"),
    path("datasets/", views.dataset_list, name="datasets"),
]
