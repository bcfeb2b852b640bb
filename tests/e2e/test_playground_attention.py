"""Chromium: the page decodes the compact attention frames into the model's own weights, for any layer and head,
and a source of the longest allowed length decodes end to end through daphne."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from tests.fixtures.browser import settled
from tests.fixtures.demo import STATUS
from tests.fixtures.playground_page import open_playground

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SENTENCE = "我的猫追了一只老鼠。"
HALF_STEP = 0.5 / 255 + 1e-6  # a frame's weight is round(w * 255) / 255
ONE_STEP = 1 / 255 + 1e-6  # a view of an ended request: the heads' mean of quantized weights, quantized again

Z = "(id) => document.getElementById(id).data[0].z"


def model_weights(source: str) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """The shipped model's own float attention for the page's request (greedy, the default max_len)."""
    from modelcore.checkpoint import load_model
    from modelcore.decoding import DecodeParams, StartEvent, TokenEvent, decode_stream

    loaded = load_model("zh-en-post")
    src_ids = loaded.src_tokenizer.source_ids(source, loaded.config.max_len)
    params = DecodeParams(capture_attention=True).capped(len(src_ids), loaded.config.max_len, 128)
    events = list(decode_stream(loaded, src_ids, params))
    start = next(e for e in events if isinstance(e, StartEvent))
    steps = [(e.self_attention.numpy(), e.cross_attention.numpy()) for e in events if isinstance(e, TokenEvent)]
    return start.encoder_attention.numpy(), steps


def pick(weights: np.ndarray, layer: int, head: str) -> np.ndarray:
    return weights[layer].mean(axis=0) if head == "mean" else weights[layer][int(head)]


def shown(page) -> dict[str, np.ndarray]:
    """The three heatmaps' weights as the page's script decoded them (masked cells as NaN)."""
    return {view: np.array(page.evaluate(Z, view), dtype=float) for view in ("view-cross", "view-self", "view-encoder")}


def assert_matches(page, encoder, steps, layer: int, enc_layer: int, head: str, within: float) -> None:
    drawn = shown(page)
    assert np.abs(drawn["view-encoder"] - pick(encoder, enc_layer, head)).max() <= within
    cross = np.stack([pick(c, layer, head) for _, c in steps])
    assert drawn["view-cross"].shape == cross.shape
    assert np.abs(drawn["view-cross"] - cross).max() <= within
    for k, (self_rows, _) in enumerate(steps):  # step k looks at <bos> and the k tokens before it
        row = drawn["view-self"][k]
        assert np.abs(row[: k + 1] - pick(self_rows, layer, head)).max() <= within
        assert np.isnan(row[k + 1:]).all()


def switch_to(page, layer: str, enc_layer: str, head: str) -> None:
    """Pick another view; wait until the views show it (the page asks the server for that view's weights)."""
    before = page.evaluate(Z, "view-cross")
    page.get_by_test_id("layer").select_option(layer)
    page.get_by_test_id("encoder-layer").select_option(enc_layer)
    page.get_by_test_id("head").select_option(head)
    page.wait_for_function(
        "([before]) => { const p = document.getElementById('view-cross'); const q = document.getElementById('view-encoder');"
        " return p.data && q.data && JSON.stringify(p.data[0].z) !== JSON.stringify(before); }",
        arg=[before], timeout=30_000,
    )
    settled(page)  # the three views are drawn in the same animation frame: every one has landed


def decoded_page(base: str, model: str, page_factory, source: str, pace_ms: str = "0"):
    """A playground page that has sent one decode of source (and, with pace 0, shows it done)."""
    page = page_factory("en-US")
    open_playground(page, base, model)
    page.get_by_test_id("source").fill(source)
    page.get_by_test_id("pace").select_option(pace_ms)
    page.get_by_test_id("run").click()
    if pace_ms == "0":
        page.wait_for_function(f"{STATUS}.startsWith('Done')", timeout=60_000)
        settled(page)
    return page


def test_the_page_decodes_each_view_to_the_models_own_weights(asgi_server, demo, zh_en, page_factory, shared_worker):
    shared_worker("interactive")
    encoder, steps = model_weights(SENTENCE)
    page = decoded_page(asgi_server, zh_en, page_factory, SENTENCE)
    assert_matches(page, encoder, steps, layer=2, enc_layer=2, head="mean", within=HALF_STEP)  # the default view

    switch_to(page, layer="0", enc_layer="1", head="1")  # the request has ended: from the copy its worker kept
    assert_matches(page, encoder, steps, layer=0, enc_layer=1, head="1", within=ONE_STEP)
    switch_to(page, layer="1", enc_layer="0", head="mean")
    assert_matches(page, encoder, steps, layer=1, enc_layer=0, head="mean", within=ONE_STEP)


def test_switching_the_head_while_a_request_runs_redraws_every_step_in_it(
    asgi_server, demo, zh_en, page_factory, shared_worker
):
    shared_worker("interactive")
    encoder, steps = model_weights(SENTENCE)
    page = decoded_page(asgi_server, zh_en, page_factory, SENTENCE, pace_ms="250")
    page.wait_for_function("document.querySelectorAll('[data-testid=output-tokens] .pg-tok').length >= 2")
    page.get_by_test_id("head").select_option("3")  # the worker answers between two steps; later frames follow
    page.wait_for_function(f"{STATUS}.startsWith('Done')", timeout=60_000)
    settled(page)
    assert_matches(page, encoder, steps, layer=2, enc_layer=2, head="3", within=HALF_STEP)


def test_a_source_of_the_longest_allowed_length_decodes_end_to_end(
    asgi_server, demo, zh_en, page_factory, shared_worker
):
    shared_worker("interactive")
    page = decoded_page(asgi_server, zh_en, page_factory, ("昨天我在花园里画了三条大鱼。" * 15)[:200])
    assert page.evaluate(f"{STATUS}").startswith("Done")
    assert page.evaluate("document.querySelectorAll('[data-testid=source-tokens] .pg-tok').length") == 201  # and <eos>
    encoder = np.array(page.evaluate(Z, "view-encoder"), dtype=float)
    assert encoder.shape == (201, 201) and np.allclose(encoder.sum(axis=1), 1, atol=201 / 255)
    n_tokens = page.evaluate("document.querySelectorAll('[data-testid=output-tokens] .pg-tok').length")
    assert n_tokens > 0 and np.array(page.evaluate(Z, "view-cross")).shape == (n_tokens, 201)


def bench_stream():
    """bench/stream.py as a module (bench/ is a folder of scripts, not a package)."""
    path = Path(__file__).resolve().parents[2] / "bench" / "stream.py"
    spec = importlib.util.spec_from_file_location("bench_stream", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_benchmarks_playground_request_is_what_the_page_sends(asgi_server, demo, zh_en, page_factory, shared_worker):
    from webapp.playground.attention import View
    from webapp.playground.protocol import PAGE_REQUEST

    shared_worker("interactive")
    page = page_factory("en-US")
    sent: list[str] = []
    page.on("websocket", lambda socket: socket.on("framesent", lambda payload: sent.append(payload)))
    open_playground(page, asgi_server, zh_en)
    for _ in range(2):  # the second request's view comes from the selectors the first filled
        page.get_by_test_id("source").fill(SENTENCE)
        page.get_by_test_id("pace").select_option("0")
        page.get_by_test_id("run").click()
        page.wait_for_function(f"{STATUS}.startsWith('Done')", timeout=60_000)
    decodes = [json.loads(text) for text in sent if json.loads(text)["type"] == "decode"]
    assert len(decodes) == 2
    bench = bench_stream().request_frame("playground", zh_en, SENTENCE, None, PAGE_REQUEST)
    for frame in decodes:
        view = View.from_dict(frame.pop("view"))
        assert view.for_model(3, 3, 4) == View().for_model(3, 3, 4)  # the bench leaves the default view
        frame.pop("tag")
        assert frame == bench
