"""Expose the user's role to every template (navigation by role)."""
from __future__ import annotations

from django.http import HttpRequest

from webapp.accounts.roles import Role, role_of


def roles(request: HttpRequest) -> dict[str, object]:
    """`role` and boolean shortcuts for templates."""
    role = role_of(getattr(request, "user", None))
    return {
        "role": role.value,
        "is_student_or_up": role != Role.ANONYMOUS,
        "is_instructor_or_up": role in (Role.INSTRUCTOR, Role.ADMIN),
        "is_admin": role == Role.ADMIN,
    }
