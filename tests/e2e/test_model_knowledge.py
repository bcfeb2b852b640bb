"""Chromium: before a decode the playground, the lesson's demonstrations and the classroom console mark the words
the model does not know; the playground still decodes the sentence."""
from __future__ import annotations

import pytest

from tests.fixtures.demo import STATUS, playground_ready, sign_in
from webapp.registry.cards import SHIPPED_CARDS

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

UNKNOWN = "document.querySelector('[data-testid=knowledge-panel] [data-testid=unknown-word]')"


def test_the_playground_marks_an_unknown_word_and_still_decodes_it(
    asgi_server, demo, zh_en, page_factory, shared_worker
):
    shared_worker("interactive")
    page = page_factory("en-US")
    playground_ready(page, asgi_server)
    page.get_by_test_id("model-picker").select_option(zh_en)
    page.get_by_test_id("source").fill("我的狗不会游泳。")
    page.wait_for_function(f"{UNKNOWN}?.textContent === '游泳'")
    panel = page.get_by_test_id("knowledge-panel")
    assert "It will still translate the sentence" in panel.inner_text()
    assert panel.get_by_test_id("card-link").get_attribute("href") == f"/models/{zh_en}/"

    page.get_by_test_id("pace").select_option("0")
    page.get_by_test_id("run").click()
    page.wait_for_function(f"{STATUS}.startsWith('Done')", timeout=60_000)
    card = next(probe for probe in SHIPPED_CARDS[zh_en].fails if probe.source == "我的狗不会游泳。")
    assert page.get_by_test_id("output").inner_text() == card.output  # what its card says it answers
    assert page.locator("[data-testid=knowledge-panel] mark").count() == 1  # still marked beside the output

    page.get_by_test_id("source").fill("昨天我在花园里画了三条大鱼。")
    page.wait_for_function(f"{UNKNOWN} === null && document.querySelector('[data-testid=knowledge]')")
    assert "Every word of this sentence" in panel.inner_text()


def test_it_speaks_chinese_on_a_chinese_page(asgi_server, demo, zh_en, page_factory):
    page = page_factory("zh-CN")
    sign_in(page, asgi_server, "student")
    page.goto(asgi_server + "/playground/")  # no worker: the marks come from the web process, before any decode
    page.get_by_test_id("model-picker").select_option(zh_en)
    page.get_by_test_id("source").fill("我们明天去北京。")
    page.wait_for_function(f"{UNKNOWN}?.textContent === '去北京'")
    text = page.get_by_test_id("knowledge-panel").inner_text()
    assert "从没见过" in text and "训练数据" in text


def test_a_lesson_demonstration_marks_what_its_model_does_not_know(asgi_server, demo, zh_en, page_factory):
    page = page_factory("en-US")
    sign_in(page, asgi_server, "student")
    page.goto(asgi_server + "/lesson/encoder/")  # no worker: the marks come from the web process, before any run
    form = page.get_by_test_id("demo-form-encoder")  # the page's demonstration that reads a sentence
    form.locator("select[name=model]").select_option(zh_en)
    form.get_by_test_id("sentence").fill("我的狗不会游泳。")
    form.locator("[data-testid=unknown-word]").wait_for()
    assert form.locator("[data-testid=unknown-word]").all_inner_texts() == ["游泳"]
    assert "It will still translate the sentence" in form.get_by_test_id("knowledge-panel").inner_text()
    form.get_by_test_id("sentence").fill("我的猫追了一只老鼠。")
    panel = "document.querySelector('[data-testid=demo-form-encoder] [data-testid=knowledge-panel]')"
    page.wait_for_function(f"!{panel}.querySelector('[data-testid=unknown-word]') && "
                           f"{panel}.querySelector('[data-testid=knowledge]')")


def test_the_instructors_console_marks_what_the_sessions_model_does_not_know(asgi_server, live_class, zh_en,
                                                                            page_factory):
    teacher = page_factory("en-US")
    sign_in(teacher, asgi_server, "instructor")
    teacher.goto(asgi_server + f"/classroom/{live_class.code}/console/")
    teacher.get_by_test_id("source").fill("我们明天去北京。")
    teacher.wait_for_function(f"{UNKNOWN}?.textContent === '去北京'")
    assert teacher.get_by_test_id("knowledge-panel").get_by_test_id("card-link").get_attribute("href") == (
        f"/models/{zh_en}/")
    teacher.get_by_test_id("source").fill("昨天我在花园里画了三条大鱼。")
    teacher.wait_for_function(f"{UNKNOWN} === null && document.querySelector('[data-testid=knowledge]')")


def test_the_real_sentence_model_s_card_draws_its_heads_against_the_glosses(asgi_server, demo, zh_en, page_factory):
    page = page_factory("en-US")
    sign_in(page, asgi_server, "student")
    page.goto(asgi_server + "/models/zh-en-hsk/")
    page.wait_for_function("document.getElementById('alignment')?.data?.[0]?.z?.length === 3")
    heatmap = page.get_by_test_id("alignment-heatmap")
    rows = page.evaluate("[...document.querySelectorAll('#alignment .ytick text')]"
                         ".sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top)"
                         ".map((t) => t.textContent)")
    assert rows == ["1", "2", "3"]  # one drawn row per decoder layer, the first on top
    assert heatmap.locator(".xtick text").all_text_contents() == ["1", "2", "3", "4", "mean over heads"]
    assert heatmap.locator(".gtitle").text_content() == "Does each attention head look at the word being translated?"
    label = heatmap.get_attribute("aria-label")
    assert heatmap.get_attribute("role") == "img" and "layer 3: " in label and "Chance: " in label
    assert "Chance (a character picked at random)" in page.get_by_test_id("alignment-caption").inner_text()
    # Its learning curve, drawn by the same page script: BLEU and chrF over four amounts of real data (the last with
    # Tatoeba's pairs), and the HSK sentences alone beside them.
    page.wait_for_function("document.getElementById('learning-curve')?.data?.length === 4")
    curve = page.get_by_test_id("learning-curve-plot")
    assert curve.locator(".xtick text").all_text_contents() == ["938", "1877", "3754", "57776"]
    assert curve.get_attribute("role") == "img" and "Real sentences alone: BLEU " in curve.get_attribute("aria-label")
    assert page.get_by_test_id("learning-curve-table").locator("tbody tr").count() == 5  # four runs with generated sentences, the HSK sentences alone
