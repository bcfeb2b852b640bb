"""The lesson's services: demonstrations through the interactive worker with a cache, training runs, progress."""
from __future__ import annotations

import hashlib
import json
import logging
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from celery.exceptions import TimeoutError as CeleryTimeout
from django.apps import apps as django_apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone
from redis.exceptions import RedisError

from webapp.celery import app
from webapp.lesson.content import EXERCISES, PAGES, exercise_page
from webapp.lesson.models import DemoResult, PageProgress, TrainingRun
from webapp.ops.limits import admit_script
from webapp.ops.redis_client import app_redis
from webapp.ops.runs import QueuePlace, RunTable
from webapp.ops.worker_presence import queue_workers, queue_workers_up
from webapp.registry.models import TrainedModel
from webapp.registry.services import models_visible_to
from webapp.site_pages.redact import without_paths
from webapp.site_pages.refusal import Refusal

logger = logging.getLogger(__name__)
DEMO_TASK = "webapp.lesson.demo"  # each demonstration takes well under a second
# Demonstrations have a queue (and worker) of their own: a class pressing Run together, or one student flooding,
# never puts a decode or a classroom run behind them on the interactive queue.
DEMO_QUEUE = "demonstrations"
TRAIN_TASK = "webapp.lesson.train"  # on the experiments queue, beside the students' experiment runs
DEMO_WAIT_S = 20.0  # a worker busy longer than this is reported as busy; the page stays usable
DEMO_LOOK_S = 0.5  # how often a request waiting for its demonstration looks whether the worker computing it is alive
DEMO_KINDS = ("encoder", "decoder", "residual", "norms", "recurrence", "cost", "cache")
TRAIN_KINDS = ("mask", "ffn")
DEFAULT_MODEL = "zh-en-post"  # the paper's Post-LN layout
DEFAULT_SENTENCE = "我的猫追了一只老鼠。"
INT_PARAMS = ("layer", "head", "query", "norm")
DEMO_MAX_CHARS = 60  # modelcore.lesson.demos.MAX_SENTENCE_CHARS, which the web process cannot import (no torch)


class DemoRefused(Refusal):
    """A request the page answers with a message (bad input, unknown model, busy worker); nothing is stored."""

    def __init__(self, code: str, message: str, retry_after: int | None = None) -> None:
        super().__init__(code, message)
        self.retry_after = retry_after  # seconds until the same request may be admitted (limits)


def _key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def demo_model(*, user: Any, name: str | None) -> TrainedModel:
    """The registry model a demonstration runs on; DemoRefused when this user cannot see one of that name."""
    # Not its training history (30-40 kB of JSON): a demonstration reads the name, folder and hash.
    model = models_visible_to(user).filter(name=name or DEFAULT_MODEL).defer("metrics").first()
    if model is None:
        raise DemoRefused("unknown_model", f"there is no model called {name or DEFAULT_MODEL!r}")
    return model


def demo_params(raw: dict[str, Any]) -> dict[str, Any]:
    """Only what a demonstration reads: the sentence, a partner sentence, and small whole-number choices."""
    params: dict[str, Any] = {"sentence": str(raw.get("sentence", "")).strip()}
    if str(raw.get("partner", "")).strip():
        params["partner"] = str(raw["partner"]).strip()
    for name in ("sentence", "partner"):  # refused here at once, not after a round trip to the worker
        if len(params.get(name, "")) > DEMO_MAX_CHARS:
            raise DemoRefused("source_too_long", f"the {name} has {len(params[name])} characters; at most {DEMO_MAX_CHARS}")
    for name in INT_PARAMS:
        value = raw.get(name)
        if value not in (None, ""):
            try:
                params[name] = int(value)
            except (TypeError, ValueError):
                raise DemoRefused("bad_choice", f"{name} must be a whole number") from None
    return params


# A stored result's last use, for evicting the least recently used, is kept to within this: thirty students
# pressing the same Run write it once, not thirty times (eviction works in days, or by count beyond the cap).
USED_AT_REFRESH_S = 60


@dataclass
class DemoAnswer:
    result: dict[str, Any]
    cached: bool


def demo_run(*, user: Any, kind: str, model_name: str | None, raw: dict[str, Any]) -> DemoAnswer:
    """A demonstration's result: from the cache when the same request was answered before, else from a worker.

    Only uncached requests count against the user's limits (LESSON_DEMO_MAX_CONCURRENT at once,
    LESSON_DEMOS_PER_MINUTE); over either the answer is `rate_limited` with the seconds to wait.
    """
    if kind not in DEMO_KINDS:
        raise DemoRefused("unknown_demo", f"there is no demonstration {kind!r}")
    model = demo_model(user=user, name=model_name)
    params = demo_params(raw)
    key = _key(kind, model.name, model.checkpoint_hash, params)
    stored = DemoResult.objects.filter(key=key).only("result", "used_at").first()
    if stored is not None:
        now = timezone.now()
        if now - stored.used_at >= timedelta(seconds=USED_AT_REFRESH_S):  # not a write for every student of a class
            DemoResult.objects.filter(pk=stored.pk).update(used_at=now)
        return DemoAnswer(stored.result, cached=True)
    _require_a_worker()
    job = {"kind": kind, "params": params, "model": model.job_fields()}
    with _demo_slot(user.pk):
        pending = app.send_task(DEMO_TASK, args=[job], queue=DEMO_QUEUE, expires=DEMO_WAIT_S)
        try:
            answer = _demo_answer(pending)
        finally:
            pending.forget()  # the answer is kept below (or not at all), not in Redis for an hour
    if "error" in answer:
        raise DemoRefused(answer["error"]["code"], answer["error"]["message"])
    try:
        DemoResult.objects.create(key=key, kind=kind, model_name=model.name, params=params, result=answer["result"])
    except IntegrityError:  # the same request answered twice at once: the first one stays
        pass
    demo_cache_evict()
    return DemoAnswer(answer["result"], cached=False)


def demo_worker_key(task_id: str) -> str:
    """Set by the worker as it starts a demonstration: its name, so the request waiting for it can see it die."""
    return f"encdec:lesson:demo:worker:{task_id}"


def _demo_answer(pending: Any) -> dict[str, Any]:
    """The worker's answer to a demonstration, waited for up to DEMO_WAIT_S (`busy` past it), looking every DEMO_LOOK_S
    whether the worker computing it is still alive (`worker_lost` once it is gone, as a decode's is)."""
    deadline = time.monotonic() + DEMO_WAIT_S
    while True:
        try:
            return pending.get(timeout=DEMO_LOOK_S)
        except CeleryTimeout:
            pass
        if time.monotonic() >= deadline:
            pending.revoke()
            raise DemoRefused("busy", "the model's worker is busy; try again in a moment", retry_after=5)
        gone = _demo_worker_gone(pending.id)
        if gone == "worker_lost":
            pending.revoke()
            raise DemoRefused("worker_lost", "the worker computing this demonstration stopped; run it again",
                              retry_after=2)
        if gone == "no_worker":
            pending.revoke()
            raise DemoRefused("no_worker", "no worker is running demonstrations right now", retry_after=5)


def _demo_worker_gone(task_id: str) -> str | None:
    """`worker_lost` when the worker that started this demonstration is no longer alive; `no_worker` when none has
    started it and no worker of the queue is alive (its only worker died while it waited in the queue); else None."""
    try:
        name = app_redis().get(demo_worker_key(task_id))
        alive = queue_workers(DEMO_QUEUE)
    except RedisError:  # Redis away: DEMO_WAIT_S still bounds the wait
        return None
    if name is not None:
        return "worker_lost" if name.decode() not in alive else None
    return None if alive else "no_worker"


class _demo_slot:  # noqa: N801 - used as a context manager, like a function
    """One of the user's running demonstrations, counted in Redis while the request waits for its answer."""

    def __init__(self, user_id: int) -> None:
        self.keys = [f"encdec:lesson:demo:running:{user_id}", f"encdec:lesson:demo:rate:{user_id}"]
        self.member = uuid.uuid4().hex

    def __enter__(self) -> None:
        now = time.time()
        try:
            verdict = admit_script(settings.REDIS_URL)(
                keys=self.keys, args=[repr(now), settings.LESSON_DEMO_MAX_CONCURRENT, settings.LESSON_DEMOS_PER_MINUTE,
                                      self.member, repr(now + DEMO_WAIT_S + 5)])
        except RedisError:
            raise DemoRefused("unavailable", "the task queue does not answer; try again in a moment") from None
        if verdict[0] == 1:
            raise DemoRefused("rate_limited", f"you have {settings.LESSON_DEMO_MAX_CONCURRENT} demonstrations running;"
                              " wait for one to finish", retry_after=1)
        if verdict[0] == 2:
            wait = max(1, round(float(verdict[1])))
            raise DemoRefused("rate_limited", f"at most {settings.LESSON_DEMOS_PER_MINUTE} new demonstrations a "
                              f"minute; try again in {wait} s", retry_after=wait)

    def __exit__(self, *exc: object) -> None:
        try:
            app_redis().zrem(self.keys[0], self.member)
        except RedisError:  # the entry expires on its own
            logger.warning("could not free a demonstration slot")


def demo_cache_evict() -> int:
    """Bound the stored results: drop those unused for LESSON_DEMO_CACHE_DAYS, then the least recently used
    beyond LESSON_DEMO_CACHE_ROWS. Returns how many went."""
    gone = DemoResult.objects.filter(used_at__lt=timezone.now() - timedelta(days=settings.LESSON_DEMO_CACHE_DAYS))
    dropped = gone.delete()[0]
    extra = DemoResult.objects.count() - settings.LESSON_DEMO_CACHE_ROWS
    if extra > 0:
        oldest = list(DemoResult.objects.order_by("used_at", "pk").values_list("pk", flat=True)[:extra])
        dropped += DemoResult.objects.filter(pk__in=oldest).delete()[0]
    return dropped


def workers_present(queue: str) -> bool | None:
    """Whether a worker of this queue published its presence lately; None when Redis does not answer."""
    try:
        return queue_workers_up(queue)
    except RedisError:
        return None


def _require_a_worker() -> None:
    """Refuse at once when no demonstrations worker has published its presence (instead of waiting DEMO_WAIT_S)."""
    present = workers_present(DEMO_QUEUE)
    if present is None:
        raise DemoRefused("unavailable", "the task queue does not answer; try again in a moment")
    if not present:
        raise DemoRefused("no_worker", "no worker is running demonstrations right now")


def demo_compute(*, job: dict[str, Any]) -> dict[str, Any]:
    """In the worker: run one demonstration on a warm model; errors come back as a code and a message."""
    from modelcore.checkpoint import CheckpointError
    from modelcore.lesson import DemoError, run_demo
    from webapp.lesson.warm import warm_model

    try:
        loaded = warm_model(job["model"]["path"], job["model"]["hash"])
    except CheckpointError as error:  # its folder is gone or unreadable on this worker
        logger.warning("demonstration model %s unavailable: %s", job["model"]["name"], error)
        return {"error": {"code": "model_unavailable",
                          "message": f"the model {job['model']['name']!r} cannot be loaded on the worker"}}
    try:
        return {"result": run_demo(job["kind"], loaded, job["params"])}
    except DemoError as error:
        return {"error": {"code": error.code, "message": str(error)}}


# The comparisons' lifecycle (queue, feed, state, resend after a Redis restart): webapp.ops.runs. They wait on the
# experiments' queue beside the students' runs, about 15 s each (two or three arms of about 5 s,
# modelcore/lesson/training.py): every queued run's place counts them.
RUNS = RunTable(model=TrainingRun, task=TRAIN_TASK, group_prefix="lesson-run", noun="lesson training run",
                # students see it; the server's paths stay in the log
                error_text=lambda error: without_paths(str(error))[:500], typical_s=lambda: 15.0)
run_group = RUNS.group


def training_request(*, user: Any, kind: str) -> TrainingRun:
    """The run of this comparison: the stored or running one when there is one, else a new one queued."""
    if kind not in TRAIN_KINDS:
        raise DemoRefused("unknown_demo", f"there is no training comparison {kind!r}")
    params: dict[str, Any] = {}
    key = _key("train", kind, params)
    with transaction.atomic():
        run = TrainingRun.objects.select_for_update().filter(key=key).first()
        if run is None:
            run = TrainingRun.objects.create(key=key, kind=kind, params=params, owner=user)
            RUNS.queue_on_commit(run)
        elif run.status == TrainingRun.Status.FAILED:
            RUNS.requeue(run)
    return run


def training_latest(*, kind: str) -> TrainingRun | None:
    return TrainingRun.objects.filter(key=_key("train", kind, {})).first()


def training_queue_place(*, run: TrainingRun) -> QueuePlace | None:
    """A queued comparison's place among all the runs waiting for the experiments workers; None unless queued."""
    return RUNS.queue_place(run)


def training_execute(*, run_id: int) -> None:
    """In the worker: train the comparison; progress goes to the run's sockets (and, less often, to its row)."""
    RUNS.execute(run_id, _train)


def _train(kind: str, params: dict[str, Any], on_progress: Any) -> dict[str, Any]:
    from modelcore.lesson import run_training

    return run_training(kind, params, on_progress=on_progress)


VISIT_REFRESH_S = 60  # a page opened again within this is not written again (a class reloads pages often)


def progress_visit(*, user: Any, page: str) -> None:
    """Note that this user opened this lesson page (its last visit to within VISIT_REFRESH_S)."""
    progress, created = PageProgress.objects.get_or_create(user=user, page=page)
    if created or (progress.visited and timezone.now() - progress.last_visit_at < timedelta(seconds=VISIT_REFRESH_S)):
        return
    progress.visited = True  # a row a reveal made (POST /lesson/exercises/<id>/reveal/) becomes a visit now
    progress.save(update_fields=["last_visit_at", "visited"])


def progress_revealed(*, user: Any, page: str) -> list[str]:
    row = PageProgress.objects.filter(user=user, page=page).only("exercises").first()
    return list(row.exercises) if row else []


def progress_reveal(*, user: Any, exercise_id: str) -> str | None:
    """Record that this user revealed an exercise's answer; its page, or None for an unknown exercise."""
    page = exercise_page(exercise_id)
    if page is None:
        return None
    with transaction.atomic():
        progress, _created = PageProgress.objects.select_for_update().get_or_create(
            user=user, page=page, defaults={"visited": False})  # only opening the page is a visit
        if exercise_id not in progress.exercises:
            progress.exercises = [*progress.exercises, exercise_id]
            progress.save(update_fields=["exercises"])
    return page


def progress_table(*, students: QuerySet) -> list[dict[str, Any]]:
    """Per student: which pages they opened and how many exercises of each they revealed."""
    rows = []
    by_user: dict[int, dict[str, PageProgress]] = {}
    for row in PageProgress.objects.filter(user__in=students):
        by_user.setdefault(row.user_id, {})[row.page] = row
    for student in students:
        seen = by_user.get(student.pk, {})
        cells = [{"page": page, "visited": page in seen and seen[page].visited, "answered": len(seen[page].exercises) if page in seen else 0,
                  "total": len(EXERCISES[page])} for page in PAGES]
        rows.append({"user": student, "cells": cells, "visited": sum(c["visited"] for c in cells),
                     "answered": sum(c["answered"] for c in cells)})
    return rows


def lesson_students(*, viewer: Any) -> tuple[QuerySet, bool]:
    """The students whose progress this viewer sees, and whether a class decides it.

    With the classroom app, an instructor sees the students who joined one of their live sessions (admins see
    everyone); without it nothing relates students to instructors, so every instructor sees every student.
    """
    from webapp.accounts.roles import STUDENTS, Role, has_role

    students = get_user_model().objects.filter(groups__name=STUDENTS, is_staff=False).order_by("username")
    if has_role(viewer, Role.ADMIN) or not django_apps.is_installed("webapp.classroom"):
        return students, False
    participant = django_apps.get_model("classroom", "Participant")
    joined = participant.objects.filter(session__instructor=viewer).values("user")
    return students.filter(pk__in=joined), True
