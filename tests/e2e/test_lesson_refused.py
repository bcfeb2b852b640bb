"""Chromium: a demonstration refused at the web process's door (the student asked too often) says so on the page."""
from __future__ import annotations

import pytest

from tests.fixtures.demo import sign_in
from tests.fixtures.services import start_web, stop_web

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def strict_door(transactional_db, tmp_path):
    """daphne with the door on and one demonstration a minute per session."""
    web = start_web(tmp_path / "daphne.log", DOOR_LIMITS="1", DOOR_SESSION_DEMOS_PER_MINUTE="1",
                    DOOR_SESSION_DEMO_BURST="1", DOOR_REFUSAL_WAIT_MS="50")
    yield web.url
    stop_web(web)


@pytest.mark.no_worker  # the first run's answer is Django's error, which a worker would replace with a result
def test_a_demonstration_refused_at_the_door_says_so_where_its_answer_goes(strict_door, demo, zh_en, page_factory):
    page = page_factory("en-US")
    sign_in(page, strict_door, "student")
    page.goto(strict_door + "/lesson/encoder/")
    run = page.get_by_test_id("demo-run-encoder")
    run.click()
    page.locator("#demo-encoder-result [data-testid=demo-error]").wait_for()  # Django's answer (no worker here)
    run.click()
    note = page.locator("#demo-encoder-result [data-code=rate_limited]")
    note.wait_for()
    assert note.text_content().startswith("Too many requests; try again in ")
