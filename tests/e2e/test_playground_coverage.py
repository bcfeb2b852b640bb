"""Chromium: under the output, the playground shows the source with each word the translation lost underlined, and
says which, in the reader's language (static/js/coverage.js)."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.fixtures.demo import STATUS, sign_in
from tests.fixtures.playground_page import open_playground

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def run(page, source: str) -> None:
    page.get_by_test_id("source").fill(source)
    page.get_by_test_id("pace").select_option("0")
    page.get_by_test_id("run").click()


def test_the_words_the_translation_lost_are_underlined_and_named(asgi_server, demo, zh_en, page_factory,
                                                                shared_worker):
    shared_worker("interactive")
    page = page_factory("en-US")
    open_playground(page, asgi_server, zh_en)
    run(page, "他哥哥在北京工作。")  # zh-en-post: "he is selling teachers ."
    sentence = page.get_by_test_id("coverage-sentence")
    expect(sentence).to_have_text("哥哥, 北京 and 工作 are not in the translation.", timeout=60_000)
    source = page.get_by_test_id("coverage-source")
    expect(source).to_have_text("他哥哥在北京工作。")
    assert source.locator("u").all_inner_texts() == ["哥哥", "北京", "工作"]
    expect(page.get_by_test_id("warnings")).to_contain_text("Dropped words")

    run(page, "我的猫追了一只老鼠。")  # right: every checked word is there, nothing underlined
    expect(page.get_by_test_id("output")).to_have_text("my cat chased a mouse .", timeout=60_000)
    expect(sentence).to_have_text("Every source word checked is in the translation.")
    assert source.locator("u").count() == 0


def test_the_missing_words_are_named_in_chinese(asgi_server, demo, zh_en, page_factory, shared_worker):
    shared_worker("interactive")
    page = page_factory("zh-CN")
    sign_in(page, asgi_server, "student")
    page.goto(asgi_server + "/playground/?model=" + zh_en)
    page.wait_for_function(f"{STATUS}.startsWith('准备就绪')")
    run(page, "他哥哥在北京工作。")
    expect(page.get_by_test_id("coverage-sentence")).to_have_text("译文中没有 哥哥, 北京和工作。", timeout=60_000)
    expect(page.get_by_test_id("warnings")).to_contain_text("漏译")
