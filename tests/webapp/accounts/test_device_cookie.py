"""Students behind the classroom's shared (NAT) address cannot lock the instructor out of a browser the instructor
signed in from before (device cookie); a browser without one is still locked."""
from __future__ import annotations

import pytest
from django.test import Client

from tests.fixtures.users import PASSWORD

CLASSROOM = "198.51.100.7"  # every browser in the room, as the site sees it


@pytest.fixture(autouse=True)
def fresh_device_counts(redis_server):
    import redis
    from django.conf import settings

    client = redis.Redis.from_url(settings.REDIS_URL)
    stale = list(client.scan_iter("encdec:device-failures:*"))
    if stale:
        client.delete(*stale)


def post(client: Client, password: str, username: str = "teach") -> int:
    return client.post("/accounts/login/", {"username": username, "password": password},
                       REMOTE_ADDR=CLASSROOM).status_code


def test_wrong_passwords_in_the_room_do_not_lock_the_instructor_out_of_a_known_browser(instructor, settings):
    laptop = Client()  # the instructor's: signed in before, from the room
    assert post(laptop, PASSWORD) == 302
    laptop.post("/accounts/logout/")
    student = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        post(student, "guess")
    assert post(student, PASSWORD) == 429  # the guessing browser is locked, the right password included
    assert post(Client(), PASSWORD) == 429  # so is any other browser without the cookie
    assert post(laptop, PASSWORD) == 302  # the instructor's own browser gets in
    assert laptop.get("/classroom/").status_code == 200
    assert post(Client(), PASSWORD) == 429  # and that did not lift the lock on the others


def test_a_known_browser_has_its_own_limit(instructor, settings):
    shared = Client()  # a classroom computer the instructor once signed in on: its cookie is no free pass
    assert post(shared, PASSWORD) == 302
    shared.post("/accounts/logout/")
    statuses = [post(shared, "guess") for _ in range(settings.AXES_FAILURE_LIMIT)]
    assert statuses == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429]  # locked at its own limit
    assert post(shared, PASSWORD) == 429
    assert post(shared, PASSWORD, username="nobody") in (200, 429)  # the cookie names one user only


def test_a_forged_or_foreign_device_cookie_counts_for_nothing(instructor, student, settings):
    other = Client()
    assert post(other, PASSWORD, username="stu") == 302  # a student's own cookie names the student
    other.post("/accounts/logout/")
    forged = Client()
    forged.cookies["encdec_device"] = "W1sidGVhY2giLCJ4Il1d:forged:signature"
    for client in (other, forged):
        for _ in range(settings.AXES_FAILURE_LIMIT):
            post(client, "guess")
    assert post(other, PASSWORD) == 429 and post(forged, PASSWORD) == 429
