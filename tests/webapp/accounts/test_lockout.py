"""Lockout that nobody can aim: client addresses behind a trusted proxy, a per-address limit, an admin's unlock."""
from __future__ import annotations

import ipaddress

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from tests.fixtures.users import PASSWORD

PROXY = "10.0.0.2"
ATTACKER = "203.0.113.9"
CLASSROOM = "198.51.100.7"


@pytest.fixture
def behind_proxy(settings):
    settings.TRUSTED_PROXY_NETWORKS = [ipaddress.ip_network(PROXY)]
    settings.CLIENT_IP_HEADER = "X-Forwarded-For"


def sign_in(username: str, password: str, client_address: str, *, via: str | None = PROXY) -> int:
    """POST the sign-in form as a browser at client_address would (through the proxy unless via is None)."""
    headers = {"REMOTE_ADDR": via or client_address}
    if via is not None:  # the proxy appends the address it saw to whatever the client sent
        headers["HTTP_X_FORWARDED_FOR"] = f"{client_address}"
    return Client().post("/accounts/login/", {"username": username, "password": password}, **headers).status_code


def test_wrong_passwords_from_elsewhere_do_not_lock_the_instructor_out_of_the_classroom(behind_proxy, instructor,
                                                                                        settings):
    for _ in range(settings.AXES_FAILURE_LIMIT + 2):
        sign_in("teach", "guess", ATTACKER)
    assert sign_in("teach", "guess", ATTACKER) == 429  # the attacker is locked out of that account
    assert sign_in("teach", PASSWORD, CLASSROOM) == 302  # the instructor, from the classroom, is not


def test_a_forged_header_from_an_untrusted_connection_is_not_believed(behind_proxy, instructor, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        Client().post("/accounts/login/", {"username": "teach", "password": "guess"},
                      REMOTE_ADDR=ATTACKER, HTTP_X_FORWARDED_FOR=CLASSROOM)  # pretends to be the classroom
    assert sign_in("teach", PASSWORD, CLASSROOM) == 302
    assert sign_in("teach", PASSWORD, ATTACKER, via=None) == 429  # it locked only its own address


def test_spraying_a_few_guesses_at_many_accounts_locks_the_address(behind_proxy, db, settings):
    settings.AXES_ADDRESS_FAILURE_LIMIT = 12
    statuses = []
    for i in range(4):
        User.objects.create_user(username=f"pupil{i}", password=PASSWORD)
        for _ in range(settings.AXES_FAILURE_LIMIT - 2):  # three guesses each: below the per-account limit
            statuses.append(sign_in(f"pupil{i}", "guess", ATTACKER))
    assert statuses == [200] * 11 + [429]  # the twelfth failure from one address locks it
    assert sign_in("pupil0", PASSWORD, ATTACKER) == 429  # for every name, the right password included
    assert sign_in("pupil0", PASSWORD, CLASSROOM) == 302  # the account itself is fine from elsewhere


def test_an_admin_unlocks_an_account_or_an_address(behind_proxy, student, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        sign_in("stu", "guess", CLASSROOM)
    assert sign_in("stu", PASSWORD, CLASSROOM) == 429
    call_command("axes_reset_username", "stu")  # what docs/deploy.md tells an admin to run
    assert sign_in("stu", PASSWORD, CLASSROOM) == 302

    settings.AXES_ADDRESS_FAILURE_LIMIT = settings.AXES_FAILURE_LIMIT
    for _ in range(settings.AXES_FAILURE_LIMIT):
        sign_in("nobody", "guess", ATTACKER)
    assert sign_in("stu", PASSWORD, ATTACKER) == 429
    call_command("axes_reset_ip", ATTACKER)
    assert sign_in("stu", PASSWORD, ATTACKER) == 302
