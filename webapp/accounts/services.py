"""Account services: student registration and the demo accounts."""
from __future__ import annotations

import secrets

from django.contrib.auth.models import Group, User
from django.db import transaction

from webapp.accounts.roles import INSTRUCTORS, STUDENTS

DEMO_STUDENTS = ("student", "student2", "student3", "student4")


def user_register_student(*, username: str, password: str, email: str = "") -> User:
    """Create a student account (member of the `students` group)."""
    with transaction.atomic():
        user = User.objects.create_user(username=username, password=password, email=email)
        user.groups.add(Group.objects.get_or_create(name=STUDENTS)[0])
    return user


def demo_password_make() -> str:
    """A readable random password for the demo accounts."""
    return "-".join(secrets.token_hex(3) for _ in range(3))


def demo_accounts_ensure(*, password: str) -> list[tuple[str, str]]:
    """Create or reset the demo accounts; returns (username, role) pairs."""
    made: list[tuple[str, str]] = []
    students, _ = Group.objects.get_or_create(name=STUDENTS)
    instructors, _ = Group.objects.get_or_create(name=INSTRUCTORS)
    with transaction.atomic():
        admin, _ = User.objects.get_or_create(username="admin")
        admin.is_staff = admin.is_superuser = True
        admin.set_password(password)
        admin.save()
        made.append(("admin", "admin"))
        teacher, _ = User.objects.get_or_create(username="instructor")
        teacher.set_password(password)
        teacher.save()
        teacher.groups.add(instructors)
        made.append(("instructor", "instructor"))
        for name in DEMO_STUDENTS:
            user, _ = User.objects.get_or_create(username=name)
            user.set_password(password)
            user.save()
            user.groups.add(students)
            made.append((name, "student"))
    return made
