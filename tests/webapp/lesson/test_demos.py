"""Demonstrations through a real interactive worker: figures from the model, a cache for identical requests,
a clear message for bad input; the training comparisons through a real experiments worker."""
from __future__ import annotations

import json
import re
import time

import pytest

from webapp.lesson.models import DemoResult, TrainingRun

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]
SENTENCE = "我的猫追了一只老鼠。"


def figures_of(response) -> dict:
    found = re.findall(r'<script type="application/json">(.*?)</script>', response.content.decode(), re.S)
    assert found, response.content.decode()[:500]
    return json.loads(found[0])


def post(client, kind: str, **data):
    return client.post(f"/lesson/demo/{kind}/", {"model": "zh-en-post", **data}, HTTP_HX_REQUEST="true")


def test_each_demonstration_draws_from_the_model_changes_with_input_and_is_cached(client_as, student, zh_en, start_worker):
    start_worker("interactive")
    client = client_as(student)
    expected = {"encoder": {"positions", "norms", "attention", "heads", "row_scores", "row_weights", "ffn"},
                "decoder": {"self_attention", "cross_attention", "cross_row", "padding"},
                "residual": {"distance", "spread", "norm_stats"}, "norms": {"batchnorm"}}
    for kind, names in expected.items():
        first = post(client, kind, sentence=SENTENCE)
        assert first.status_code == 200
        assert "Computed just now by a worker." in first.content.decode()
        figures = figures_of(first)
        assert set(figures) == names and all(f["data"] for f in figures.values())
        again = post(client, kind, sentence=SENTENCE)
        assert "Answered from the cache" in again.content.decode()
        assert figures_of(again) == figures  # the same input, the same figure
        other = figures_of(post(client, kind, sentence="三个聪明的女孩喝五瓶水。"))
        assert other != figures  # another input, another figure
    assert DemoResult.objects.count() == 8
    decoder = post(client, "decoder", sentence=SENTENCE).content.decode()
    assert "my cat chased a mouse" in decoder and 'data-testid="teacher-forced-matches"' in decoder


BAD = [({"sentence": ""}, "empty_source"), ({"sentence": "猫" * 80}, "source_too_long"),
       ({"sentence": "ĀĀ"}, "unknown_tokens"), ({"sentence": SENTENCE, "model": "no-such-model"}, "unknown_model"),
       ({"sentence": SENTENCE, "layer": "x"}, "bad_choice"), ({"sentence": SENTENCE, "query": "40"}, "bad_choice")]


def test_bad_input_gets_a_clear_message_and_nothing_is_stored(client_as, student, zh_en, start_worker):
    start_worker("interactive")
    client = client_as(student)
    for data, code in BAD:
        response = client.post("/lesson/demo/encoder/", {"model": "zh-en-post", **data}, HTTP_HX_REQUEST="true")
        assert response.status_code == 200
        assert f'data-code="{code}"' in response.content.decode(), data
        plain = client.post("/lesson/demo/encoder/", {"model": "zh-en-post", **data})
        assert plain.status_code == 422
    assert DemoResult.objects.count() == 0
    assert client.get("/lesson/encoder/").status_code == 200  # the page is still there


def test_without_a_worker_the_page_says_so_at_once(client_as, student, zh_en):
    response = post(client_as(student), "encoder", sentence=SENTENCE)
    assert 'data-code="no_worker"' in response.content.decode()
    assert DemoResult.objects.count() == 0


def test_a_busy_worker_is_reported_not_waited_for_ever(client_as, student, zh_en, monkeypatch):
    monkeypatch.setattr("webapp.lesson.services._require_a_worker", lambda: None)  # it looks present...
    monkeypatch.setattr("webapp.lesson.services.DEMO_WAIT_S", 0.5)  # ...but nothing answers
    response = post(client_as(student), "encoder", sentence=SENTENCE)
    assert 'data-code="busy"' in response.content.decode()
    assert DemoResult.objects.count() == 0


def test_a_queued_run_without_a_worker_says_so(client_as, student, empty_training_queue):
    panel = client_as(student).post("/lesson/train/ffn/", HTTP_HX_REQUEST="true").content.decode()
    assert 'data-testid="run-no-worker"' in panel and 'hx-trigger="every 1s"' in panel


def test_the_mask_comparison_trains_on_a_worker_with_progress(client_as, student, start_worker, empty_training_queue):
    start_worker("experiments")
    client = client_as(student)
    panel = client.post("/lesson/train/mask/", HTTP_HX_REQUEST="true").content.decode()
    assert 'hx-trigger="every 1s"' in panel
    run = TrainingRun.objects.get()
    seen = set()
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        run.refresh_from_db()
        seen.add(round(run.progress, 1))
        if run.finished:
            break
        time.sleep(0.5)
    assert run.status == "succeeded", run.error
    assert len(seen) > 2  # progress moved while it trained
    causal, unmasked = run.result["arms"]
    assert unmasked["final_loss"] < causal["final_loss"] and unmasked["exact_match"] < causal["exact_match"]
    done = client.get(f"/lesson/runs/{run.pk}/").content.decode()
    assert "every 1s" not in done and set(figures_of(client.get(f"/lesson/runs/{run.pk}/"))) == {"loss", "scores"}
    assert client.post("/lesson/train/mask/", HTTP_HX_REQUEST="true")  # asking again finds the same run
    assert TrainingRun.objects.count() == 1
    assert client.post("/lesson/train/nope/").status_code == 404
