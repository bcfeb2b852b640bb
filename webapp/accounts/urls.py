from __future__ import annotations

from django.urls import path

from webapp.accounts import views

app_name = "accounts"
urlpatterns = [
    path("login/", views.SignInView.as_view(), name="login"),
    path("logout/", views.SignOutView.as_view(), name="logout"),
    path("register/", views.register, name="register"),
]
