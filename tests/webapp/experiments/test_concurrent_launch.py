"""Launches at once against a real daphne: a busy database is never a 500, a quota never overrun.

Runs on the default SQLite and again on PostgreSQL in CI's second phase (.ci/run sets DATABASE_URL), where
the user's row lock is what keeps two launches from both taking the quota's last run; by hand:
DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/pytest tests/webapp/experiments/test_concurrent_launch.py
"""
from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth.models import Group, User

from tests.fixtures.stack import browser_headers
from webapp.experiments.models import ExperimentRun

pytestmark = [pytest.mark.services, pytest.mark.slow]


def _browser(user: User, base: str) -> dict[str, str]:
    return browser_headers(user, base, "/experiments/")


def _launch(base: str, headers: dict[str, str], form: dict) -> int:
    body = urllib.parse.urlencode(form).encode()
    request = urllib.request.Request(base + "/experiments/launch/", data=body, headers=headers, method="POST")
    opener = urllib.request.build_opener(_NoRedirect())
    try:
        with opener.open(request, timeout=60) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # the 302 to the run page is the answer itself
        return None


def _students(n: int) -> list[User]:
    group = Group.objects.get_or_create(name="students")[0]
    users = [User.objects.create_user(username=f"pupil{i}", password="x-long-enough-42") for i in range(n)]
    for user in users:
        user.groups.add(group)
    return users


def test_ten_students_launching_at_once_get_runs_or_a_retry_never_a_500(asgi_server, launch_data, empty_training_queue):
    browsers = [_browser(user, asgi_server) for user in _students(10)]
    forms = [{**launch_data, "seed": i} for i in range(10)]  # ten different runs: ten writes
    with ThreadPoolExecutor(10) as pool:
        statuses = list(pool.map(lambda args: _launch(asgi_server, *args), zip(browsers, forms, strict=True)))
    assert set(statuses) <= {302, 429}, statuses  # 429: busy, with Retry-After
    assert ExperimentRun.objects.filter(shipped=False).count() == statuses.count(302)
    assert statuses.count(302) >= 1


def test_one_student_launching_many_at_once_gets_no_more_than_the_quota(asgi_server, launch_data, empty_training_queue,
                                                                         settings):
    (student,) = _students(1)
    browser = _browser(student, asgi_server)
    with ThreadPoolExecutor(6) as pool:
        statuses = list(pool.map(lambda seed: _launch(asgi_server, browser, {**launch_data, "seed": seed}), range(6)))
    assert set(statuses) <= {302, 429}, statuses
    assert ExperimentRun.objects.filter(owner=student).count() == settings.EXPERIMENTS_DAILY_QUOTA  # 3, never more
