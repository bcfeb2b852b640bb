"""Django admin with the app's rules: anonymous visitors to the app's login, signed-in non-staff get 403."""
from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext_lazy as _


class LabAdminSite(admin.AdminSite):
    site_header = _("EncDec Lab administration")
    site_title = _("EncDec Lab admin")

    def login(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        if request.user.is_authenticated and not request.user.is_staff:
            raise PermissionDenied("The admin is for staff only.")
        if not request.user.is_authenticated:
            return redirect_to_login(request.GET.get("next") or request.get_full_path())
        return super().login(request, extra_context)
