"""The lesson's demonstrations as a class uses them: per-user limits with a time to retry, a bounded cache,
a queue of their own, and a clear answer when the model cannot be loaded."""
from __future__ import annotations

import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
import redis
from django.utils import timezone

from webapp.lesson.models import DemoResult

pytestmark = [pytest.mark.django_db(transaction=True)]
SENTENCES = ["我的猫追了一只老鼠。", "他没有吃饭。", "猫追老鼠。", "去年我喜欢猫。"]


def post(client, sentence: str, htmx: bool = True, kind: str = "encoder"):
    extra = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(f"/lesson/demo/{kind}/", {"model": "zh-en-post", "sentence": sentence}, **extra)


@pytest.fixture(autouse=True)
def no_recorded_demonstrations(redis_server):
    """Each test counts from zero (user ids repeat between tests)."""
    client = redis.Redis.from_url(redis_server)
    stale = list(client.scan_iter("encdec:lesson:demo:*"))
    if stale:
        client.delete(*stale)


@pytest.mark.services
@pytest.mark.slow
def test_over_the_per_minute_limit_a_student_is_told_when_to_retry_and_others_are_not(
        client_as, student, django_user_model, zh_en, shared_worker, settings, redis_server):
    settings.LESSON_DEMOS_PER_MINUTE = 2
    shared_worker("demonstrations")
    results = redis.Redis.from_url(redis_server)
    kept_before = len(list(results.scan_iter("celery-task-meta-*")))
    client = client_as(student)
    for sentence in SENTENCES[:2]:
        assert "Computed just now" in post(client, sentence).content.decode()
    refused = post(client, SENTENCES[2]).content.decode()
    assert 'data-code="rate_limited"' in refused and "try again in" in refused
    plain = post(client, SENTENCES[3], htmx=False)  # a script's request: 429 with the seconds to wait
    assert plain.status_code == 429 and 1 <= int(plain["Retry-After"]) <= 60
    assert "Answered from the cache" in post(client, SENTENCES[0]).content.decode()  # the cache costs nothing
    other = client_as(django_user_model.objects.create_user("other-student"))
    assert "Computed just now" in post(other, SENTENCES[2]).content.decode()  # the limit is per student
    assert DemoResult.objects.count() == 3
    # The worker's answers are kept in the database, not left in Redis for an hour as well.
    assert len(list(results.scan_iter("celery-task-meta-*"))) == kept_before


@pytest.mark.services
def test_a_student_waiting_on_a_demonstration_cannot_start_more_than_the_limit(
        client_as, student, django_user_model, zh_en, settings, redis_server, monkeypatch):
    """A busy worker (present, but answering nothing): the first request holds the student's only slot while it
    waits; a second one at once is refused with `rate_limited`, and another student is still admitted."""
    from webapp.ops.worker_presence import PREFIX, workers_publish

    settings.LESSON_DEMO_MAX_CONCURRENT = 1
    monkeypatch.setattr("webapp.lesson.services.DEMO_WAIT_S", 3.0)
    client = redis.Redis.from_url(redis_server)
    workers_publish(client, "present@test", ["demonstrations"])  # present, yet nothing consumes the queue
    try:
        first: list[str] = []
        waiting = threading.Thread(target=lambda: first.append(post(client_as(student), SENTENCES[0]).content.decode()))
        waiting.start()
        running = f"encdec:lesson:demo:running:{student.pk}"
        deadline = time.monotonic() + 10
        while not client.zcard(running) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert client.zcard(running) == 1
        second = post(client_as(student), SENTENCES[1]).content.decode()
        assert 'data-code="rate_limited"' in second
        other = post(client_as(django_user_model.objects.create_user("other-student")), SENTENCES[1]).content.decode()
        assert 'data-code="busy"' in other  # admitted (its own slot), then told the worker is busy
        waiting.join(timeout=20)
        assert 'data-code="busy"' in first[0]
        assert client.zcard(running) == 0  # the slot is free again once the request ended
        assert 'data-code="busy"' in post(client_as(student), SENTENCES[1]).content.decode()
    finally:
        client.delete(PREFIX + "present@test")


def test_the_cache_drops_results_unused_for_days_then_the_least_recently_used(settings):
    from webapp.lesson.services import demo_cache_evict

    settings.LESSON_DEMO_CACHE_DAYS, settings.LESSON_DEMO_CACHE_ROWS = 7, 10
    now = timezone.now()
    for i in range(14):
        DemoResult.objects.create(key=f"{i:064d}", kind="encoder", model_name="zh-en-post", params={}, result={})
    # 0-1 unused for 8 days, 2-13 used i minutes ago in reverse: 13 most recently
    for i in range(14):
        used = now - timedelta(days=8) if i < 2 else now - timedelta(minutes=20 - i)
        DemoResult.objects.filter(key=f"{i:064d}").update(used_at=used)
    assert demo_cache_evict() == 4
    assert sorted(int(k) for k in DemoResult.objects.values_list("key", flat=True)) == list(range(4, 14))


@pytest.mark.services
@pytest.mark.slow
def test_a_cached_answer_counts_as_used_and_a_missing_model_folder_is_model_unavailable(
        client_as, student, zh_en, shared_worker):
    from webapp.registry.models import TrainedModel

    shared_worker("demonstrations")
    client = client_as(student)
    post(client, SENTENCES[0])
    stored = DemoResult.objects.get()
    DemoResult.objects.update(used_at=timezone.now() - timedelta(days=3))
    post(client, SENTENCES[0])
    assert DemoResult.objects.get().used_at > timezone.now() - timedelta(minutes=1) and stored.pk
    TrainedModel.objects.filter(name="zh-en-post").update(path="/nowhere/zh-en-post", checkpoint_hash="moved")
    answer = post(client, SENTENCES[1])
    assert answer.status_code == 200 and 'data-code="model_unavailable"' in answer.content.decode()
    assert "/nowhere" not in answer.content.decode()  # the worker's paths stay on the worker
    assert post(client, SENTENCES[1], htmx=False).status_code == 422


def _post_over_http(base: str, headers: dict[str, str], sentence: str, htmx: bool = True) -> tuple[int, str, dict]:
    body = urllib.parse.urlencode({"model": "zh-en-post", "sentence": sentence}).encode()
    extra = {"HX-Request": "true"} if htmx else {}
    request = urllib.request.Request(base + "/lesson/demo/encoder/", data=body, headers={**headers, **extra},
                                     method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(), dict(error.headers)


@pytest.mark.services
@pytest.mark.slow
def test_a_script_flooding_refused_demonstrations_is_held_at_the_door_while_the_class_is_served(
        student, django_user_model, zh_en, shared_worker, tmp_path):
    """Through daphne: once refused for its rate, a student's next demonstrations wait out the refusal
    before Django sees them (a cached one is still served after the wait); past HELD_PER_SESSION at once the
    rest are answered 429 at the door with the seconds to wait; another student is not held back."""
    from tests.fixtures.services import start_web, stop_web
    from tests.fixtures.stack import browser_headers
    from webapp.realtime.hold import HELD_PER_SESSION

    shared_worker("demonstrations")
    web = start_web(tmp_path / "daphne.log", LESSON_DEMOS_PER_MINUTE="1")
    try:
        script = browser_headers(student, web.url, "/lesson/encoder/")
        other = browser_headers(django_user_model.objects.create_user("other-student"), web.url, "/lesson/encoder/")
        assert "Computed just now" in _post_over_http(web.url, script, SENTENCES[0])[1]
        assert 'data-code="rate_limited"' in _post_over_http(web.url, script, SENTENCES[1])[1]
        flood = [f"{SENTENCES[1]}{i}" for i in range(HELD_PER_SESSION + 4)]
        with ThreadPoolExecutor(len(flood) + 1) as pool:
            held = [pool.submit(_post_over_http, web.url, script, s) for s in flood]
            others = pool.submit(_post_over_http, web.url, other, SENTENCES[2]).result()
            answers = [future.result() for future in held]
        assert "Computed just now" in others[1]  # another student: computed, not held behind the flood
        page = [a for a in answers if a[0] == 200]
        door = [a for a in answers if a[0] == 429]
        assert len(page) + len(door) == len(flood) and 1 <= len(door) and len(page) <= HELD_PER_SESSION
        assert all('data-code="rate_limited"' in body for _, body, _ in page)
        for _, body, headers in door:
            assert 1 <= int(headers["Retry-After"]) <= 60 and "try again in" in body
        assert "Answered from the cache" in _post_over_http(web.url, script, SENTENCES[0])[1]  # held, then served
        assert DemoResult.objects.count() == 2
    finally:
        stop_web(web)
