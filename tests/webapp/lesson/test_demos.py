"""Demonstrations through a real interactive worker: figures from the model, a cache for identical requests,
a clear message for bad input; the training comparisons through a real experiments worker."""
from __future__ import annotations

import json
import re

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from tests.fixtures.numbers import first_difference
from tests.fixtures.sockets import socket_for
from webapp.lesson.models import DemoResult, TrainingRun
from webapp.lesson.services import training_request

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]
SENTENCE = "我的猫追了一只老鼠。"


def figures_of(response) -> dict:
    found = re.findall(r'<script type="application/json">(.*?)</script>', response.content.decode(), re.S)
    assert found, response.content.decode()[:500]
    return json.loads(found[0])


def post(client, kind: str, **data):
    return client.post(f"/lesson/demo/{kind}/", {"model": "zh-en-post", **data}, HTTP_HX_REQUEST="true")


def test_each_demonstration_draws_from_the_model_changes_with_input_and_is_cached(client_as, student, zh_en, shared_worker):
    shared_worker("demonstrations")
    client = client_as(student)
    expected = {"encoder": {"positions", "norms", "attention", "heads", "row_scores", "row_weights", "ffn"},
                "decoder": {"self_attention", "cross_attention", "cross_row", "padding"},
                "residual": {"distance", "spread", "norm_stats"}, "norms": {"batchnorm", "modes", "means"}}
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
    norms = post(client, "norms", sentence=SENTENCE).content.decode()  # BatchNorm's two modes, labelled
    assert "BatchNorm in training mode" in norms and 'data-testid="inference-shift">0.0<' in norms


BAD = [({"sentence": ""}, "empty_source"), ({"sentence": "猫" * 80}, "source_too_long"),
       ({"sentence": "ĀĀ"}, "unknown_tokens"), ({"sentence": SENTENCE, "model": "no-such-model"}, "unknown_model"),
       ({"sentence": SENTENCE, "layer": "x"}, "bad_choice"), ({"sentence": SENTENCE, "query": "40"}, "bad_choice")]


def test_bad_input_gets_a_clear_message_and_nothing_is_stored(client_as, student, zh_en, shared_worker):
    shared_worker("demonstrations")
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
    assert 'data-testid="run-no-worker"' in panel and "data-run-id=" in panel


async def test_the_mask_comparison_trains_on_a_worker_and_its_socket_sees_progress(client_as, student, shared_worker,
                                                                                    empty_training_queue):
    await sync_to_async(shared_worker)("experiments")
    client = await sync_to_async(client_as)(student)
    run = await database_sync_to_async(training_request)(user=student, kind="mask")  # queued for the worker
    ws = await socket_for(f"/ws/lesson/runs/{run.pk}/", student)
    assert (await ws.connect())[0]
    first = await ws.receive_json_from(timeout=10)
    assert first["type"] == "state" and first["kind"] == "mask"
    frames = [first]
    while frames[-1]["type"] not in ("done", "failed"):
        frames.append(await ws.receive_json_from(timeout=180))
    await ws.disconnect()
    assert frames[-1]["type"] == "done", frames[-1]
    progress = [f for f in frames if f["type"] == "progress"]
    assert len(progress) > 3 and {f["arm"] for f in progress} == {"causal mask", "no mask"}
    assert all(a["progress"] <= b["progress"] for a, b in zip(progress, progress[1:], strict=False))
    await database_sync_to_async(run.refresh_from_db)()
    assert run.status == "succeeded"
    causal, unmasked = run.result["arms"]
    assert unmasked["final_loss"] < causal["final_loss"] and unmasked["exact_match"] < causal["exact_match"]
    done = await sync_to_async(client.get)(f"/lesson/runs/{run.pk}/")
    assert set(figures_of(done)) == {"loss", "scores"}
    again = await sync_to_async(client.post)("/lesson/train/mask/", HTTP_HX_REQUEST="true")
    assert f'data-run-id="{run.pk}"' in again.content.decode()  # asking again finds the same run
    assert await database_sync_to_async(TrainingRun.objects.count)() == 1
    assert (await sync_to_async(client.post)("/lesson/train/nope/")).status_code == 404


async def test_a_socket_for_no_such_run_is_told_so(student):
    ws = await socket_for("/ws/lesson/runs/999999/", student)
    await ws.connect()
    assert (await ws.receive_json_from())["code"] == "not_found"


CONCURRENT = [(kind, sentence, i % 2) for i, (kind, sentence) in enumerate(
    (k, s) for s in ("我的猫追了一只老鼠。", "他没有吃饭。", "我们看见我的猫。", "猫追老鼠。", "去年我喜欢猫。",
                     "他喜欢吃饭。", "我的狗追了一只猫。", "三个聪明的女孩喝五瓶水。") for k in ("encoder", "decoder", "residual", "norms"))]


def test_many_demonstrations_at_once_on_one_threaded_worker_each_store_their_own_result(
        django_user_model, zh_en, start_worker):
    """As a class presses Run together: one worker with four threads, 16 students asking 32 different things at
    once. Each stored result equals the same request answered alone, so no student is served another's data."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    from webapp.lesson.services import demo_run

    start_worker("demonstrations", pool="threads", concurrency=4)
    students = [django_user_model.objects.create_user(f"pupil-{i}") for i in range(16)]

    def run(request, user) -> dict:
        kind, sentence, layer = request
        return demo_run(user=user, kind=kind, model_name="zh-en-post",
                        raw={"sentence": sentence, "layer": layer}).result

    def run_in_thread(numbered) -> dict:
        i, request = numbered
        try:
            return run(request, students[i % len(students)])  # two requests per student: within the limits
        finally:
            connection.close()  # the pool thread's own connection

    with ThreadPoolExecutor(max_workers=32) as pool:
        together = list(pool.map(run_in_thread, enumerate(CONCURRENT)))
    assert DemoResult.objects.count() == len(CONCURRENT)
    stored = {(r.kind, r.params["sentence"], r.params["layer"]): r.result for r in DemoResult.objects.all()}
    DemoResult.objects.all().delete()
    for i, (request, answer) in enumerate(zip(CONCURRENT, together, strict=True)):
        alone = run(request, students[i % len(students)])  # computed again with nothing else running
        difference = first_difference(answer, alone) or first_difference(stored[request], alone)
        assert difference is None, f"{request} differs from the same request run alone at {difference}"
