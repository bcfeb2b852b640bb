"""Every page works under the Content-Security-Policy header: nothing it needs is refused."""
from __future__ import annotations

import time

import pytest

from webapp.accounts.services import demo_accounts_ensure

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PASSWORD = "demo-e2e-pass-31"
PAGES = ["/", "/lesson/", "/lesson/encoder/", "/playground/", "/experiments/norm-position/", "/experiments/residuals/",
         "/models/", "/training/", "/admin/"]


@pytest.fixture
def demo(transactional_db):
    demo_accounts_ensure(password=PASSWORD)


def test_pages_run_with_the_policy_and_nothing_is_refused(asgi_server, demo, page_factory):
    page = page_factory("en-US", csp=True)
    refused: list[str] = []
    page.on("console", lambda message: refused.append(message.text) if "Content Security Policy" in message.text
            else None)
    page.goto(asgi_server + "/accounts/login/")
    response = page.request.get(asgi_server + "/accounts/login/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit].primary")
    page.wait_for_url(asgi_server + "/")
    for path in PAGES:
        page.goto(asgi_server + path)
        page.wait_for_load_state("load")
    page.goto(asgi_server + "/playground/")
    status = page.get_by_test_id("status")  # a locator: Playwright's own world, no eval in the page
    deadline = time.monotonic() + 15
    while status.inner_text().startswith("Connecting") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not status.inner_text().startswith("Connecting")  # its socket opened: connect-src 'self' takes ws:
    assert refused == []
