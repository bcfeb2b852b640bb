"""Chromium: beside the output, the playground says how sure the model is and warns of what it never learned."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.fixtures.demo import STATUS, sign_in
from tests.fixtures.playground_page import open_playground

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def run(page, source: str) -> None:
    page.get_by_test_id("source").fill(source)
    page.get_by_test_id("pace").select_option("0")
    page.get_by_test_id("run").click()


def test_a_sentence_with_unknown_words_is_warned_in_plain_words(asgi_server, demo, zh_en, page_factory, shared_worker):
    shared_worker("interactive")
    page = page_factory("en-US")
    open_playground(page, asgi_server, zh_en)
    run(page, "他哥哥在北京工作。")
    warnings = page.get_by_test_id("warnings")
    expect(warnings).to_contain_text("Words never seen in training: 哥哥, 北京, 工作.", timeout=60_000)
    expect(warnings).to_contain_text("Low confidence")
    expect(page.get_by_test_id("confidence")).to_have_text(re.compile(r"^Confidence: \d+ % "))

    run(page, "我的猫追了一只老鼠。")  # the lesson's sentence: right, and nothing to warn of
    expect(page.get_by_test_id("output")).to_have_text("my cat chased a mouse .", timeout=60_000)
    expect(warnings).to_have_text(re.compile(r"^No warning\."))


def test_the_warning_reads_in_chinese(asgi_server, demo, zh_en, page_factory, shared_worker):
    shared_worker("interactive")
    page = page_factory("zh-CN")
    sign_in(page, asgi_server, "student")
    page.goto(asgi_server + "/playground/?model=" + zh_en)
    page.wait_for_function(f"{STATUS}.startsWith('准备就绪')")
    run(page, "他哥哥在北京工作。")
    warnings = page.get_by_test_id("warnings")
    expect(warnings).to_contain_text("训练中从未见过的词：哥哥、北京、工作。", timeout=60_000)
    expect(warnings).to_contain_text("置信度低")
    expect(page.get_by_test_id("confidence")).to_have_text(re.compile(r"^置信度："))
