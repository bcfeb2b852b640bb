"""Chromium signs in as each demo role and sees its home page, in English and in Chinese."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.fixtures.demo import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# role -> (test id that only this role's home shows, heading text in English, in Chinese)
CARDS = {"student": "role-student", "instructor": "role-instructor", "admin": "admin-card"}


@pytest.mark.parametrize("username", ["student", "instructor", "admin"])
def test_each_role_sees_its_home_in_english_then_chinese(asgi_server, demo, page_factory, username):
    page = page_factory("en-US")
    sign_in(page, asgi_server, username)
    assert page.get_by_test_id("home-title").inner_text() == f"Welcome, {username}"
    assert page.get_by_test_id(CARDS[username]).is_visible()
    if username != "admin":
        assert page.get_by_test_id("admin-card").count() == 0
    assert page.get_by_test_id("who").inner_text().endswith(username)

    page.click("button[data-lang=zh-hans]")  # the language switch
    page.wait_for_selector("html[lang=zh-hans]")
    assert page.get_by_test_id("home-title").inner_text() == f"欢迎，{username}"
    expect(page.locator("header")).to_contain_text("退出登录")


def test_a_chinese_browser_gets_chinese_by_default(asgi_server, demo, page_factory):
    page = page_factory("zh-CN")
    page.goto(asgi_server + "/accounts/login/")
    assert page.locator("h1").inner_text() == "登录"
    sign_in(page, asgi_server, "student")
    assert page.get_by_test_id("home-title").inner_text() == "欢迎，student"


def test_htmx_and_plotly_are_served_locally_with_the_csrf_header(asgi_server, demo, page_factory):
    page = page_factory("en-US")
    external: list[str] = []
    page.on("request", lambda r: None if r.url.startswith(asgi_server) else external.append(r.url))
    sign_in(page, asgi_server, "student")
    assert page.evaluate("typeof htmx") == "object"
    headers = page.get_attribute("body", "hx-headers")
    assert "X-CSRFToken" in headers and len(headers) > 40
    response = page.request.get(asgi_server + "/static/vendor/plotly/plotly.min.js")
    assert response.ok and b"plotly" in response.body()[:2000].lower()
    assert external == []
