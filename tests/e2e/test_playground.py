"""Chromium: a student watches the shipped zh-en model translate token by token, then steps through one."""
from __future__ import annotations

import pytest

from tests.fixtures.demo import STATUS
from tests.fixtures.playground_page import SENTENCE, TOKENS, open_playground

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

def watch_translation(page, source: str, pace_ms: str = "100") -> tuple[str, list[str]]:
    """Run one decode at a classroom pace; returns the final output and every text shown on the way."""
    page.get_by_test_id("source").fill(source)
    page.get_by_test_id("pace").select_option(pace_ms)
    page.evaluate("""() => {
        const output = document.querySelector('[data-testid=output]');
        window.seenTexts = [];
        new MutationObserver(() => window.seenTexts.push(output.textContent))
            .observe(output, {childList: true, characterData: true, subtree: true});
    }""")
    page.get_by_test_id("run").click()
    page.wait_for_function(f"{STATUS}.startsWith('Done')", timeout=60_000)
    return page.get_by_test_id("output").inner_text(), page.evaluate("window.seenTexts")


def test_a_student_watches_a_chinese_sentence_translate_token_by_token(
    asgi_server, demo, zh_en, page_factory, shared_worker
):
    shared_worker("interactive")
    page = page_factory("en-US")
    open_playground(page, asgi_server, zh_en)
    final, seen = watch_translation(page, SENTENCE)

    assert final == "i drew three big fish in the garden yesterday ."  # the shipped model's translation
    partial = {text for text in seen if text and text != final}
    assert all(final.startswith(text) for text in partial)
    assert len({len(text) for text in partial}) >= 3  # the output grew in front of the student
    n_tokens = page.evaluate(TOKENS)
    cross = page.evaluate("(() => { const p = document.getElementById('view-cross'); "
                          "return {type: p.data[0].type, rows: p.data[0].z.length, cols: p.data[0].z[0].length}; })()")
    # One column per source character, then the <eos> the encoder also reads.
    assert cross == {"type": "heatmap", "rows": n_tokens, "cols": len(SENTENCE) + 1}
    assert page.locator("#view-cross g.hm image").count() == 1  # drawn, not only planned


def test_in_step_mode_one_click_gives_exactly_one_token(asgi_server, demo, zh_en, page_factory, shared_worker):
    shared_worker("interactive")
    page = page_factory("en-US")
    open_playground(page, asgi_server, zh_en)
    page.get_by_test_id("source").fill(SENTENCE)
    for clicks in (1, 2, 3):
        page.get_by_test_id("step").click()
        page.wait_for_function(f"{TOKENS} === {clicks}")
        page.wait_for_timeout(600)  # absence: nothing more comes until the next click
        assert page.evaluate(TOKENS) == clicks
    assert len(page.get_by_test_id("output").inner_text().split()) == 3
    page.get_by_test_id("cancel").click()
    page.wait_for_function(f"{STATUS}.startsWith('Done')")


def test_beam_mode_shows_the_best_hypothesis_in_every_view(asgi_server, demo, zh_en, page_factory, shared_worker):
    shared_worker("interactive")
    page = page_factory("en-US")
    open_playground(page, asgi_server, zh_en)
    page.get_by_test_id("source").fill("我的猫追了一只老鼠。")
    page.get_by_test_id("pace").select_option("0")
    page.get_by_test_id("run").click()
    page.wait_for_function(f"{STATUS}.startsWith('Done')", timeout=60_000)
    greedy_status = page.get_by_test_id("status").inner_text()
    page.check("input[name=strategy][value=beam]")
    page.fill("input[name=beam_size]", "8")
    page.get_by_test_id("run").click()
    page.wait_for_function(f"{STATUS}.startsWith('Done')", timeout=60_000)

    words = page.get_by_test_id("output").inner_text().split()
    chips = page.eval_on_selector_all("[data-testid=output-tokens] .pg-tok", "els => els.map(e => e.firstChild.textContent)")
    assert chips == words
    for view in ("view-cross", "view-self"):  # the rows' labels are the hypothesis's tokens, in order
        labels = page.evaluate(f"document.getElementById('{view}').layout.yaxis.ticktext")
        assert labels == [f"{i}: {word}" for i, word in enumerate(words)], view
    # The status counts the best hypothesis's tokens and its end token, as greedy does for the same output.
    assert page.get_by_test_id("status").inner_text() == greedy_status
    assert f"{len(words) + 1} tokens" in greedy_status
    topk = page.evaluate("(() => { const p = document.getElementById('view-topk'); "
                         "return {x: p.data[0].x, title: p.layout.title.text}; })()")
    assert topk["x"] == [f"{i}: {word}" for i, word in enumerate(words)]
    assert topk["title"].startswith("the best hypothesis")
    tree = page.evaluate("""(() => { const p = document.getElementById('view-beams');
        return {rows: Math.max(...p.data[1].y) + 1, stars: p.data[3].y, labels: p.data[2].text,
                height: p.getBoundingClientRect().height}; })()""")
    assert tree["rows"] == 8
    assert tree["stars"] and all(0 <= y < tree["rows"] for y in tree["stars"])  # beside a beam, not below the tree
    assert tree["labels"] == words  # only the shown hypothesis is written out: no labels run into each other
    assert tree["height"] >= 8 * 40
