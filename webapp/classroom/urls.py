from __future__ import annotations

from django.urls import path

from webapp.classroom import views

app_name = "classroom"
urlpatterns = [
    path("", views.index, name="index"),
    path("new/", views.create, name="create"),
    path("join/", views.join, name="join"),
    path("<str:code>/", views.follow, name="follow"),
    path("<str:code>/console/", views.console, name="console"),
    path("<str:code>/end/", views.end, name="end"),
    path("<str:code>/demo/", views.demo, name="demo"),
    path("<str:code>/history/", views.history, name="history"),
    path("<str:code>/history/answers.csv", views.answers_csv, name="answers_csv"),
]
