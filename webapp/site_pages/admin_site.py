"""Django admin with the app's rules: anonymous visitors to the app's login, signed-in non-staff get 403."""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import admin
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext_lazy as _


def _guard(request: HttpRequest) -> HttpResponse | None:
    if not request.user.is_authenticated:
        return redirect_to_login(request.GET.get("next") or request.get_full_path())
    if not request.user.is_staff:
        raise PermissionDenied("The admin is for staff only.")
    return None


class LabAdminSite(admin.AdminSite):
    site_header = _("EncDec Lab administration")
    site_title = _("EncDec Lab admin")

    def admin_view(self, view: Callable[..., HttpResponse], cacheable: bool = False) -> Callable[..., HttpResponse]:
        inner = super().admin_view(view, cacheable)

        @wraps(inner)
        def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            return _guard(request) or inner(request, *args, **kwargs)

        return guarded

    def login(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        return _guard(request) or super().login(request, extra_context)
