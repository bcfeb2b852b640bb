"""A demonstration whose worker dies while computing it: the page is told `worker_lost` as soon as the worker's
presence is gone, as a decode is, not `busy` after the whole wait (a real demonstrations worker, killed)."""
from __future__ import annotations

import signal
import threading
import time

import pytest

from webapp.lesson.services import DEMO_WAIT_S, DemoRefused, demo_run
from webapp.ops.redis_client import app_redis

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]


def test_a_demonstration_whose_worker_is_killed_is_worker_lost_not_busy(student, zh_en, start_worker):
    app_redis().delete("demonstrations")  # earlier tests' demonstrations left queued: this worker takes only this one
    for key in app_redis().scan_iter("encdec:lesson:demo:worker:*"):
        app_redis().delete(key)
    worker = start_worker("demonstrations")
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            demo_run(user=student, kind="encoder", model_name=zh_en, raw={"sentence": "我们看见我的猫。"})
            outcome["answer"] = "computed"
        except DemoRefused as refused:
            outcome["refused"], outcome["at"] = refused.code, time.monotonic()

    waiting = threading.Thread(target=run)
    waiting.start()
    deadline = time.monotonic() + 30
    while not any(key.decode().startswith("encdec:lesson:demo:worker:")
                  for key in app_redis().scan_iter("encdec:lesson:demo:worker:*")):
        assert time.monotonic() < deadline and waiting.is_alive(), f"the worker never started it: {outcome}"
        time.sleep(0.02)
    worker.stop(signal.SIGKILL)  # mid-demonstration (the model is still loading on a cold worker)
    killed_at = time.monotonic()
    waiting.join(DEMO_WAIT_S + 5)
    assert outcome.get("refused") == "worker_lost", outcome
    print(f"worker_lost {outcome['at'] - killed_at:.1f} s after the kill")



def test_a_demonstration_still_queued_when_its_only_worker_dies_is_told_no_worker_at_once(student, zh_en, start_worker):
    """One worker (one at a time) computing one demonstration, a second waiting in the queue behind it: killed, the
    first is `worker_lost` and the second `no_worker`, each within seconds, neither `busy` after the whole wait."""
    app_redis().delete("demonstrations")
    for key in app_redis().scan_iter("encdec:lesson:demo:worker:*"):
        app_redis().delete(key)
    worker = start_worker("demonstrations")
    outcomes: dict[str, dict[str, object]] = {"first": {}, "second": {}}

    def run(which: str, sentence: str) -> None:
        try:
            demo_run(user=student, kind="encoder", model_name=zh_en, raw={"sentence": sentence})
            outcomes[which]["answer"] = "computed"
        except DemoRefused as refused:
            outcomes[which]["refused"], outcomes[which]["at"] = refused.code, time.monotonic()

    first = threading.Thread(target=run, args=("first", "我们看见我的猫。"))
    first.start()
    deadline = time.monotonic() + 30
    while not list(app_redis().scan_iter("encdec:lesson:demo:worker:*")):
        assert time.monotonic() < deadline and first.is_alive(), f"the worker never started it: {outcomes}"
        time.sleep(0.02)
    second = threading.Thread(target=run, args=("second", "我的猫看见我们。"))
    second.start()
    while app_redis().llen("demonstrations") == 0 and second.is_alive():  # the second in the queue, not started
        assert time.monotonic() < deadline, f"the second never reached the queue: {outcomes}"
        time.sleep(0.02)
    worker.stop(signal.SIGKILL)
    killed_at = time.monotonic()
    first.join(DEMO_WAIT_S + 5)
    second.join(DEMO_WAIT_S + 5)
    assert outcomes["first"].get("refused") == "worker_lost", outcomes
    assert outcomes["second"].get("refused") == "no_worker", outcomes  # not `busy`, which comes after the whole wait
    print(f"no_worker {outcomes['second']['at'] - killed_at:.1f} s after the kill")
