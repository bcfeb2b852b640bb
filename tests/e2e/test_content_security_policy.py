"""Every page works under the Content-Security-Policy header: nothing it needs is refused."""
from __future__ import annotations

import time

import pytest

from tests.fixtures.demo import LESSON_PAGES, sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def socket_opened(page, what: str) -> None:
    """The page's status leaves "Connecting…": its socket opened (connect-src 'self' takes ws:)."""
    status = page.get_by_test_id("status")  # a locator: Playwright's own world, no eval in the page
    deadline = time.monotonic() + 15
    while status.inner_text().startswith("Connecting") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not status.inner_text().startswith("Connecting"), f"{what}: the socket did not open"


def test_pages_run_with_the_policy_and_nothing_is_refused(asgi_server, pages_to_walk, class_pages, live_class,
                                                          page_factory, shared_worker):
    shared_worker("interactive,demonstrations")
    refused: list[str] = []

    def watched(who: str | None = None):
        page = page_factory("en-US", csp=True)
        page.on("console", lambda message: refused.append(f"{page.url}: {message.text}")
                if "Content Security Policy" in message.text else None)
        if who:
            sign_in(page, asgi_server, who)
        return page

    page = watched()
    page.goto(asgi_server + "/accounts/login/")
    response = page.request.get(asgi_server + "/accounts/login/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    sign_in(page, asgi_server, "admin")
    demos = dict(LESSON_PAGES)
    for path in pages_to_walk:
        page.goto(asgi_server + path)
        page.wait_for_load_state("load")
        if demos.get(path):  # the demonstration's fragment (htmx) and its charts, under the policy too
            page.get_by_test_id(f"demo-run-{demos[path]}").click()
            page.wait_for_selector(f"[data-testid=demo-result-{demos[path]}] .js-plotly-plot", timeout=60_000)
    screens = {}
    for who, path in class_pages:
        screens[who] = screens.get(who) or watched(who)
        screens[who].goto(asgi_server + path)
        screens[who].wait_for_load_state("load")
    screens["instructor"].goto(f"{asgi_server}/classroom/{live_class.code}/console/")
    socket_opened(screens["instructor"], "the console")
    screens["student"].goto(f"{asgi_server}/classroom/{live_class.code}/")
    socket_opened(screens["student"], "the student's screen")
    page.goto(asgi_server + "/playground/")
    socket_opened(page, "the playground")
    assert refused == []
