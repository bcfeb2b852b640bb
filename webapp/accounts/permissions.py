"""View helpers: anonymous visitors go to the login page, signed-in users without the right get 403."""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from webapp.accounts.roles import Role, has_role

View = Callable[..., HttpResponse]


def role_required(minimum: Role) -> Callable[[View], View]:
    """Guard a view: login redirect for anonymous visitors, 403 below `minimum`."""

    def decorator(view: View) -> View:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not has_role(request.user, minimum):
                raise PermissionDenied(f"This page needs the {minimum.value} role.")
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


signed_in = role_required(Role.STUDENT)
instructors_only = role_required(Role.INSTRUCTOR)
admins_only = role_required(Role.ADMIN)
