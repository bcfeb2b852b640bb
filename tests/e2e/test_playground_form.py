"""Chromium: the playground's form as a student handles it: a reload mid-decode keeps the sentence and the settings,
and a double-click on Run starts one decode, not two."""
from __future__ import annotations

import json

import pytest

from tests.fixtures.demo import STATUS
from tests.fixtures.playground_page import SENTENCE, open_playground

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def decodes_sent(page) -> list[dict]:
    """Every `decode` frame the page sends on its sockets from now on."""
    sent: list[dict] = []

    def on_socket(ws) -> None:
        def on_frame(payload) -> None:
            frame = json.loads(payload) if isinstance(payload, str) else {}
            if frame.get("type") == "decode":
                sent.append(frame)
        ws.on("framesent", on_frame)

    page.on("websocket", on_socket)
    return sent


def test_a_reload_mid_decode_keeps_the_sentence_and_settings_and_a_double_click_runs_once(
        asgi_server, demo, zh_en, page_factory, shared_worker):
    shared_worker("interactive")
    page = page_factory("en-US")
    sent = decodes_sent(page)
    open_playground(page, asgi_server, zh_en)
    page.get_by_test_id("source").fill(SENTENCE)
    page.get_by_test_id("pace").select_option("250")
    page.locator("input[name=strategy][value=beam]").check()
    page.get_by_test_id("run").dblclick()
    page.wait_for_function(f"{STATUS}.startsWith('Decoding')")
    page.wait_for_timeout(300)  # absence: a second decode, if the page sent one, is on its way by now
    assert len(sent) == 1, sent  # one decode for one double-click
    assert sent[0]["source"] == SENTENCE and sent[0]["pace_ms"] == 250 and sent[0]["strategy"] == "beam"

    page.reload()  # mid-decode, as a student pressing F5 does
    page.wait_for_function(f"{STATUS}.startsWith('Ready')")
    assert page.get_by_test_id("source").input_value() == SENTENCE
    assert page.get_by_test_id("pace").input_value() == "250"
    assert page.locator("input[name=strategy][value=beam]").is_checked()
    assert page.locator(".pg-when[data-when=beam]").is_visible()  # the beam fields come back with the choice
    page.get_by_test_id("run").click()  # and a later press is a new decode, as before
    page.wait_for_function(f"{STATUS}.startsWith('Done')", timeout=60_000)
    assert len(sent) == 2 and sent[1]["source"] == SENTENCE


def test_run_pressed_again_at_once_after_a_refusal_is_a_new_decode(asgi_server, demo, zh_en, page_factory, shared_worker):
    """The double-click guard covers a press still unanswered: once the server refused the first, a quick second
    press (the student fixed the sentence) is sent, not swallowed."""
    shared_worker("interactive")
    page = page_factory("en-US")
    sent = decodes_sent(page)
    open_playground(page, asgi_server, zh_en)
    page.get_by_test_id("source").fill("   ")
    page.get_by_test_id("run").click()
    page.wait_for_function(f"{STATUS}.includes('empty')")
    page.get_by_test_id("source").fill(SENTENCE)
    page.get_by_test_id("run").click()  # well within the double-click window of the first press
    page.wait_for_function(f"{STATUS}.startsWith('Done')", timeout=60_000)
    assert [frame["source"] for frame in sent] == ["   ", SENTENCE]
