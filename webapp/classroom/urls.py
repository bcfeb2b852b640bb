from __future__ import annotations

from django.urls import path

from webapp.classroom import plan_views, views

app_name = "classroom"
urlpatterns = [
    path("", views.index, name="index"),
    path("new/", views.create, name="create"),
    path("join/", views.join, name="join"),
    path("plans/", plan_views.plan_list, name="plans"),
    path("plans/import/", plan_views.plan_import, name="plan_import"),
    path("plans/shipped/duplicate/", plan_views.plan_duplicate, name="plan_duplicate_shipped"),
    path("plans/shipped/export/", plan_views.plan_export, name="plan_export_shipped"),
    path("plans/<int:pk>/", plan_views.plan_page, name="plan"),
    path("plans/<int:pk>/duplicate/", plan_views.plan_duplicate, name="plan_duplicate"),
    path("plans/<int:pk>/delete/", plan_views.plan_delete, name="plan_delete"),
    path("plans/<int:pk>/export/", plan_views.plan_export, name="plan_export"),
    path("<str:code>/", views.follow, name="follow"),
    path("<str:code>/console/", views.console, name="console"),
    path("<str:code>/end/", views.end, name="end"),
    path("<str:code>/demo/", views.demo, name="demo"),
    path("<str:code>/history/", views.history, name="history"),
    path("<str:code>/history/answers.csv", views.answers_csv, name="answers_csv"),
]
