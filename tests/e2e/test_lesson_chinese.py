"""Chromium reads the lesson in Chinese, each demonstration run, and finds no visible English outside code, names,
formulas and the model's own English output."""
from __future__ import annotations

import pytest

from tests.e2e.test_chinese_pages import english_on
from tests.fixtures.demo import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
PAGES = [("/lesson/", ()), ("/lesson/encoder/", ("encoder", "recurrence", "cost")), ("/lesson/decoder/", ("decoder", "cache")),
         ("/lesson/residual-norm/", ("residual",)), ("/lesson/questions/", ("norms",)), ("/lesson/glossary/", ())]


def test_the_lesson_reads_in_chinese_with_its_demonstrations(asgi_server, demo, zh_en, page_factory, shared_worker):
    shared_worker("demonstrations")
    page = page_factory("zh-CN")
    sign_in(page, asgi_server, "student")
    found = []
    for path, kinds in PAGES:
        page.goto(asgi_server + path)
        for kind in kinds:
            page.get_by_test_id(f"demo-run-{kind}").click()
            page.wait_for_selector(f"[data-testid=demo-result-{kind}] .js-plotly-plot", timeout=60_000)
        found += english_on(page, path, "student")
    teacher = page_factory("zh-CN")
    sign_in(teacher, asgi_server, "instructor")
    teacher.goto(asgi_server + "/lesson/progress/")
    found += english_on(teacher, "/lesson/progress/", "instructor")
    assert found == []
