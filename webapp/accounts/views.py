"""Sign in, sign out, register."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.views import LoginView, LogoutView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from webapp.accounts.forms import StudentRegistrationForm
from webapp.accounts.lockout import device_cookie_set, registration_allowed, registration_take
from webapp.accounts.services import user_register_student


class SignInView(LoginView):
    template_name = "accounts/login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: object) -> dict[str, object]:
        context = super().get_context_data(**kwargs)
        context["registration_open"] = settings.REGISTRATION_OPEN
        return context

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        device_cookie_set(self.request, response, form.get_user().get_username())  # lockout.py: device cookies
        return response


class SignOutView(LogoutView):
    pass


def register(request: HttpRequest) -> HttpResponse:
    """Let a visitor create a student account, unless registration is closed."""
    if not settings.REGISTRATION_OPEN:
        return render(request, "accounts/registration_closed.html", status=403)
    if request.user.is_authenticated:
        return redirect(settings.LOGIN_REDIRECT_URL)
    form = StudentRegistrationForm(request.POST or None)
    if request.method == "POST" and not registration_allowed(request):
        return _too_many(request, form)
    if request.method == "POST" and form.is_valid():
        if not registration_take(request):  # counted first, compared after: two at once cannot both get the last place
            return _too_many(request, form)
        user = user_register_student(
            username=form.cleaned_data["username"],
            password=form.cleaned_data["password1"],
            email=form.cleaned_data.get("email") or "",
        )
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect(settings.LOGIN_REDIRECT_URL)
    return render(request, "accounts/register.html", {"form": form}, status=400 if form.errors else 200)


def _too_many(request: HttpRequest, form: StudentRegistrationForm) -> HttpResponse:
    form.add_error(None, _("Too many accounts were made from this address in the last hour; try again later."))
    return render(request, "accounts/register.html", {"form": form}, status=429)
