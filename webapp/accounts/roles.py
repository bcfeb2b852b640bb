"""Roles: students and instructors are groups, admins are staff."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
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


# Roles read during the current HTTP request, by user id (RoleMemoMiddleware). A page asks three times or more
# (the view's check, the navigation, the models it lists): one query answers them all. A socket keeps the role its
# handshake read for its join's checks only (roles_known); every later check reads the database (a role can change
# while a socket is open).
_request_roles: ContextVar[dict[Any, Role] | None] = ContextVar("request_roles", default=None)


def role_of(user: Any) -> Role:
    """The highest role a user holds (admins can do what instructors can, and so on)."""
    if user is None or not user.is_authenticated:
        return Role.ANONYMOUS
    if user.is_staff or user.is_superuser:
        return Role.ADMIN
    memo = _request_roles.get()
    if memo is not None and user.pk in memo:
        return memo[user.pk]
    names = {group.name for group in user.groups.all()}
    role = Role.INSTRUCTOR if INSTRUCTORS in names else Role.STUDENT
    if memo is not None:
        memo[user.pk] = role
    return role


class RoleMemoMiddleware:
    """Each HTTP request reads a user's groups once, however often its view and templates ask for the role."""

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        with roles_known({}):
            return self.get_response(request)


@contextmanager
def roles_known(known: dict[Any, Role]) -> Iterator[dict[Any, Role]]:
    """Within it, role_of answers the users in `known` without a query and adds those it reads to it: one request's
    checks, or one socket's handshake and join, read a user's groups once."""
    token = _request_roles.set(known)
    try:
        yield known
    finally:
        _request_roles.reset(token)


def has_role(user: Any, minimum: Role) -> bool:
    """True when the user's role is at least `minimum`."""
    return _RANK[role_of(user)] >= _RANK[minimum]


def user_now(user_id: Any) -> Any:
    """The user as the database has it now (None when deleted or deactivated): a socket's rights are read again
    from it at each privileged action, since a role can change while the socket is open."""
    from django.contrib.auth import get_user_model

    return get_user_model().objects.filter(pk=user_id, is_active=True).first()
