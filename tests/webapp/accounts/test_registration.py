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


@pytest.mark.parametrize("look_alike", ["асе", "АСЕ", "a1ice", "aIice"])  # Cyrillic а, с, е; one; capital i
def test_a_name_that_looks_like_an_existing_one_is_refused_whatever_its_alphabet(db, look_alike):
    User.objects.create_user(username="ace", password=PASSWORD)
    User.objects.create_user(username="alice", password=PASSWORD)
    response = register(look_alike)
    assert response.status_code == 400
    assert "looks like the name of an existing user" in response.content.decode()
    assert User.objects.count() == 2
    chinese = Client(HTTP_ACCEPT_LANGUAGE="zh-hans").post("/accounts/register/", {
        "username": look_alike, "email": "", "password1": PASSWORD, "password2": PASSWORD,
    }, REMOTE_ADDR="192.0.2.11")
    assert "看起来和一位已有用户的名字一样" in chinese.content.decode()
    assert register("acer").status_code == 302 and register("алиса").status_code == 302  # different names pass


def test_one_address_may_make_only_so_many_accounts_an_hour(settings):
    settings.REGISTRATIONS_PER_HOUR = 2
    assert [register(f"pupil{i}").status_code for i in range(3)] == [302, 302, 429]
    assert "Too many accounts were made from this address" in register("pupil9").content.decode()
    assert User.objects.filter(username__startswith="pupil").count() == 2
    assert register("elsewhere", address="198.51.100.20").status_code == 302


def _register_over_http(base: str, username: str) -> int:
    """GET the form for its CSRF cookie, then POST it, as a browser does; the status of the POST."""
    import re
    import urllib.error
    import urllib.parse
    import urllib.request

    with urllib.request.urlopen(base + "/accounts/register/", timeout=30) as page:
        token = re.search(r"csrftoken=([^;]+)", page.headers["Set-Cookie"]).group(1)
    body = urllib.parse.urlencode({"username": username, "email": "", "password1": PASSWORD, "password2": PASSWORD,
                                   "csrfmiddlewaretoken": token}).encode()
    request = urllib.request.Request(base + "/accounts/register/", data=body, method="POST",
                                     headers={"Cookie": f"csrftoken={token}", "Referer": base + "/accounts/register/"})

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):  # the 302 home is the answer itself
            return None

    try:
        with urllib.request.build_opener(NoRedirect()).open(request, timeout=60) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.mark.services
@pytest.mark.slow
def test_registrations_at_once_from_one_address_never_pass_the_hours_limit(transactional_db, tmp_path):
    """Two web processes, as behind the proxy, and twelve sign-ups at once from one address: at most the limit."""
    from concurrent.futures import ThreadPoolExecutor

    from tests.fixtures.services import start_web, stop_web

    webs = [start_web(tmp_path / f"daphne{i}.log", REGISTRATIONS_PER_HOUR="3") for i in range(2)]
    try:
        with ThreadPoolExecutor(12) as pool:
            statuses = list(pool.map(lambda i: _register_over_http(webs[i % 2].url, f"rush{i}"), range(12)))
    finally:
        for web in webs:
            stop_web(web)
    assert set(statuses) <= {302, 429}, statuses
    assert statuses.count(302) == 3 and User.objects.filter(username__startswith="rush").count() == 3
