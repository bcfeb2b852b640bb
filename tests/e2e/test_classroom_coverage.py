"""Chromium: when the console's run ends, every screen of the class shows the source with each word the translation
lost underlined and names them, in the screen's language; a screen that joins after the end shows it too."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.fixtures.demo import console_opened, sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SOURCE = "他哥哥在北京工作。"  # zh-en-post: "he is selling teachers ." (哥哥, 北京 and 工作 lost)


def test_every_screen_of_the_class_names_the_words_the_run_lost(asgi_server, demo, zh_en, page_factory,
                                                                shared_worker):
    shared_worker("interactive")
    teacher = page_factory("en-US")
    code = console_opened(teacher, asgi_server, "Lost words", zh_en)
    ann = page_factory("zh-CN")
    sign_in(ann, asgi_server, "student")
    ann.goto(f"{asgi_server}/classroom/{code}/")
    teacher.wait_for_function("document.querySelector('[data-testid=presence-count]').textContent === '1'")
    teacher.get_by_test_id("source").fill(SOURCE)
    teacher.select_option("#cr-pace", "0")
    teacher.get_by_test_id("run").click()
    expect(ann.get_by_test_id("coverage-sentence")).to_have_text("译文中没有 哥哥, 北京和工作。", timeout=60_000)
    assert ann.get_by_test_id("coverage-source").locator("u").all_inner_texts() == ["哥哥", "北京", "工作"]
    expect(teacher.get_by_test_id("coverage-sentence")).to_have_text("哥哥, 北京 and 工作 are not in the translation.")

    bob = page_factory("en-US")  # joins after the run ended: the room as it is, the lost words included
    sign_in(bob, asgi_server, "student2")
    bob.goto(f"{asgi_server}/classroom/{code}/")
    expect(bob.get_by_test_id("coverage-sentence")).to_have_text("哥哥, 北京 and 工作 are not in the translation.",
                                                                 timeout=30_000)
