"""Registration refuses look-alike names and more accounts from one address than a class needs."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-enough-pass-42"


@pytest.fixture(autouse=True)
def no_counts(redis_server):
    import redis

    client = redis.Redis.from_url(redis_server)
    stale = list(client.scan_iter("encdec:registrations:*"))
    if stale:
        client.delete(*stale)


def register(username: str, address: str = "192.0.2.10") -> Client | int:
    response = Client().post("/accounts/register/", {
        "username": username, "email": "", "password1": PASSWORD, "password2": PASSWORD,
    }, REMOTE_ADDR=address)
    return response


def test_a_name_mixing_look_alike_alphabets_is_refused(db):
    User.objects.create_user(username="admin", password=PASSWORD)
    response = register("аdmin")  # the first letter is Cyrillic
    assert response.status_code == 400
    assert "mixes alphabets whose letters look alike" in response.content.decode()
    assert User.objects.count() == 1
    assert register("Иван").status_code == 302  # one alphabet, whichever it is, is fine


def test_one_address_may_make_only_so_many_accounts_an_hour(settings):
    settings.REGISTRATIONS_PER_HOUR = 2
    assert [register(f"pupil{i}").status_code for i in range(3)] == [302, 302, 429]
    assert "Too many accounts were made from this address" in register("pupil9").content.decode()
    assert User.objects.filter(username__startswith="pupil").count() == 2
    assert register("elsewhere", address="198.51.100.20").status_code == 302
