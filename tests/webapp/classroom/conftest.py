"""A live session on the tiny published model, and students to seat in it."""
from __future__ import annotations

from typing import Any

import pytest

from tests.webapp.playground.conftest import fresh_limits, tiny, worker  # noqa: F401  (fixtures)


@pytest.fixture
def session(tiny, instructor):  # noqa: F811  (the fixture imported above)
    from webapp.classroom.services import session_create

    return session_create(instructor=instructor, title="Reverse, live", model_name="tiny")


@pytest.fixture
def tiny_published(tmp_path):
    """The tiny model, published in the registry (no worker)."""
    from tests.fixtures.models import make_model_folder
    from webapp.registry.services import model_register_folder

    return model_register_folder(folder=make_model_folder(tmp_path / "tiny"), name="tiny", task="reverse",
                                 published=True)


@pytest.fixture
def make_student(django_user_model):
    """make_student("name") -> a new user in the students group."""
    from django.contrib.auth.models import Group

    def make(name: str) -> Any:
        user = django_user_model.objects.create_user(username=name, password="pw-for-tests-only")
        user.groups.add(Group.objects.get_or_create(name="students")[0])
        return user

    return make


@pytest.fixture
def seated(session, make_student):
    """seated("name") -> a student with a seat in the test's session."""
    from webapp.classroom.models import Participant

    def seat(name: str) -> Any:
        user = make_student(name)
        Participant.objects.create(session=session, user=user)
        return user

    return seat


@pytest.fixture(autouse=True)
def fresh_join_counts(redis_server):
    """No wrong join codes counted from an earlier test (user ids and addresses repeat between tests)."""
    import redis
    from django.conf import settings

    client = redis.Redis.from_url(settings.REDIS_URL)
    stale = list(client.scan_iter("encdec:classroom:joins:*"))
    if stale:
        client.delete(*stale)
