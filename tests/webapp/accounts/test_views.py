"""Sign in, sign out, registration and lockout."""
from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client

from tests.fixtures.users import PASSWORD
from webapp.accounts.roles import Role, role_of


def test_it_signs_a_student_in_and_sends_them_home(student):
    client = Client()
    response = client.post("/accounts/login/", {"username": "stu", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200


def test_a_wrong_password_is_said_on_the_form(student):
    response = Client().post("/accounts/login/", {"username": "stu", "password": "nope"})
    assert response.status_code == 200
    assert b"correct username and password" in response.content


def test_it_locks_an_account_out_after_repeated_failures(student, settings):
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post("/accounts/login/", {"username": "stu", "password": "wrong"})
    response = client.post("/accounts/login/", {"username": "stu", "password": PASSWORD})
    assert response.status_code == 429
    assert b"Too many failed sign-ins" in response.content
    assert Client().get("/").status_code == 302  # and no session was made


def test_sign_out_is_a_post_and_ends_the_session(client_as, student):
    client = client_as(student)
    assert client.get("/accounts/logout/").status_code == 405
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_registration_makes_a_signed_in_student(db):
    client = Client()
    response = client.post("/accounts/register/", {
        "username": "newbie", "email": "", "password1": "a-long-enough-pass-42", "password2": "a-long-enough-pass-42",
    })
    assert response.status_code == 302
    user = User.objects.get(username="newbie")
    assert role_of(user) == Role.STUDENT
    assert client.get("/").status_code == 200


def test_registration_refuses_a_weak_password_and_says_why(db):
    response = Client().post("/accounts/register/", {
        "username": "weak", "password1": "12345678", "password2": "12345678",
    })
    assert response.status_code == 400
    assert b"too common" in response.content
    assert not User.objects.filter(username="weak").exists()


def test_registration_can_be_turned_off(db, settings):
    settings.REGISTRATION_OPEN = False
    response = Client().post("/accounts/register/", {
        "username": "x", "password1": "a-long-enough-pass-42", "password2": "a-long-enough-pass-42",
    })
    assert response.status_code == 403
    assert not User.objects.filter(username="x").exists()
    assert b"Create a student account" not in Client().get("/accounts/login/").content


def test_demo_accounts_take_the_password_from_the_environment(db, monkeypatch):
    from django.core.management import call_command

    monkeypatch.setenv("DEMO_PASSWORD", "demo-secret-77")
    call_command("demo_accounts")
    roles = {u.username: role_of(u) for u in User.objects.all()}
    assert roles["admin"] == Role.ADMIN and roles["instructor"] == Role.INSTRUCTOR and roles["student"] == Role.STUDENT
    assert sum(1 for r in roles.values() if r == Role.STUDENT) >= 3
    assert User.objects.get(username="admin").check_password("demo-secret-77")
