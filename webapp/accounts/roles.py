"""Roles: students and instructors are groups, admins are staff."""
from __future__ import annotations

from enum import StrEnum
from typing import Any

STUDENTS = "students"
INSTRUCTORS = "instructors"


class Role(StrEnum):
    ANONYMOUS = "anonymous"
    STUDENT = "student"
    INSTRUCTOR = "instructor"
    ADMIN = "admin"


_RANK = {Role.ANONYMOUS: 0, Role.STUDENT: 1, Role.INSTRUCTOR: 2, Role.ADMIN: 3}


def role_of(user: Any) -> Role:
    """The highest role a user holds (admins can do what instructors can, and so on)."""
    if user is None or not user.is_authenticated:
        return Role.ANONYMOUS
    if user.is_staff or user.is_superuser:
        return Role.ADMIN
    names = {group.name for group in user.groups.all()}
    if INSTRUCTORS in names:
        return Role.INSTRUCTOR
    return Role.STUDENT


def has_role(user: Any, minimum: Role) -> bool:
    """True when the user's role is at least `minimum`."""
    return _RANK[role_of(user)] >= _RANK[minimum]


def user_now(user_id: Any) -> Any:
    """The user as the database has it now (None when deleted or deactivated): a socket's rights are read again
    from it at each privileged action, since a role can change while the socket is open."""
    from django.contrib.auth import get_user_model

    return get_user_model().objects.filter(pk=user_id, is_active=True).first()
