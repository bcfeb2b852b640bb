"""Chromium: a token frame lost on the way is noticed from `seq`, and the page redraws from the request's state."""
from __future__ import annotations

import json

import pytest

from tests.e2e.lossy_asgi import DROPPED
from tests.fixtures.demo import STATUS
from tests.fixtures.playground_page import SENTENCE, TOKENS, open_playground
from tests.fixtures.services import start_web, stop_web

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def lossy_server(transactional_db, tmp_path):
    """daphne serving the app through tests/e2e/lossy_asgi.py: each request's token frame of seq DROPPED is lost."""
    web = start_web(tmp_path / "daphne.log", app="tests.e2e.lossy_asgi:application")
    yield web.url
    stop_web(web)


def test_a_lost_token_frame_is_repaired_and_the_page_shows_the_workers_output(
    lossy_server, demo, zh_en, page_factory, shared_worker
):
    shared_worker("interactive")
    page = page_factory("en-US")
    received: list[dict] = []
    sent: list[dict] = []

    def watch(ws) -> None:
        ws.on("framereceived", lambda payload: received.append(json.loads(payload)))
        ws.on("framesent", lambda payload: sent.append(json.loads(payload)))

    page.on("websocket", watch)
    open_playground(page, lossy_server, zh_en)
    page.get_by_test_id("source").fill(SENTENCE)
    page.get_by_test_id("pace").select_option("100")
    page.get_by_test_id("run").click()
    page.wait_for_function(f"{STATUS}.startsWith('Done')", timeout=60_000)
    done = next(frame for frame in received if frame["type"] == "done")
    page.wait_for_function(f"{TOKENS} === {done['steps']}")  # the state frame's redraw

    seqs = [frame["seq"] for frame in received if frame["type"] == "token"]
    assert DROPPED not in seqs and len(seqs) == done["steps"] - 1  # the frame really was lost on the way
    assert {"type": "resync", "request_id": done["request_id"]} in sent
    # every token the worker sent, by seq: the frames that arrived and what each state frame carried (a
    # resync while the decode runs answers with the frames so far; later ones arrive as usual)
    by_seq = {frame["seq"]: frame["token"] for frame in received if frame["type"] == "token"}
    for state in (frame for frame in received if frame["type"] == "state"):
        by_seq.update((f["seq"], f["token"]) for f in state["frames"] if f["type"] == "token")
    assert sorted(by_seq) == list(range(done["steps"]))
    worker_tokens = [by_seq[seq] for seq in sorted(by_seq)]
    shown = page.eval_on_selector_all("[data-testid=output-tokens] .pg-tok",
                                      "chips => chips.map(c => c.firstChild.textContent)")
    assert shown == worker_tokens
    assert page.get_by_test_id("output").inner_text() == done["text"]
