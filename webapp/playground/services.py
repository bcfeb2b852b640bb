"""Accepting, cancelling and stepping decode requests: checks, per-user limits, hand-off to the worker."""
from __future__ import annotations

import json
import time
import uuid
from typing import Any

import orjson
from django.conf import settings

from webapp.accounts.roles import Role, has_role
from webapp.celery import app
from webapp.ops.limits import admit_script
from webapp.ops.redis_client import app_redis
from webapp.ops.worker_presence import queue_workers_up
from webapp.playground import keys
from webapp.playground.attention import View, attention_frame_of_packed
from webapp.playground.protocol import DecodeRequest, Limits, ProtocolError, parse_decode
from webapp.registry.models import TrainedModel, unknown_model_text
from webapp.registry.services import models_visible_to

DECODE_TASK = "webapp.playground.decode"  # webapp.playground.tasks.decode, on the interactive queue

def playground_limits() -> Limits:
    return Limits(max_source_chars=settings.PLAYGROUND_MAX_SOURCE_CHARS, max_tokens=settings.PLAYGROUND_MAX_TOKENS)


def decode_request(frame: dict[str, Any]) -> DecodeRequest:
    """A `decode` frame checked against the settings' limits (ProtocolError naming what is wrong)."""
    return parse_decode(frame, playground_limits())


def new_job(
    *, user_id: int, reply_channel: str, request: DecodeRequest, model: dict[str, Any], relay: str | None = None
) -> dict[str, Any]:
    """The job a worker runs for this request (see worker.lanes.Job)."""
    return {
        "request_id": uuid.uuid4().hex[:16],
        "user_id": user_id,
        "reply": reply_channel,
        "relay": relay,
        "model": model,
        "source": request.source,
        "params": request.params,
        "pace_ms": request.pace_ms,
        "step_mode": request.step_mode,
        "compare_cache": request.compare_cache,
        "tag": request.tag,
        "view": request.view.to_dict(),
        "max_tokens": settings.PLAYGROUND_MAX_TOKENS,
        "max_seconds": settings.PLAYGROUND_MAX_SECONDS,
        "submitted_at": time.time(),
    }


def decode_queue(jobs: list[dict[str, Any]]) -> list[ProtocolError | None]:
    """Count each job against its user's limits and queue the admitted ones, all in one Celery message.

    One Redis round trip for every job's limits (the script runs job after job, so a user's
    own jobs in one call are counted one after another), one publish for them all. Returns,
    per job, None (queued) or the ProtocolError that refused it.
    """
    if not interactive_workers_up():
        return [NO_WORKER] * len(jobs)
    admit = admit_script(settings.REDIS_URL)
    pipe = app_redis().pipeline(transaction=False)
    for job in jobs:
        now = job["submitted_at"]
        admit(
            keys=[keys.running_key(job["user_id"]), keys.rate_key(job["user_id"])],
            args=[repr(now), settings.PLAYGROUND_MAX_CONCURRENT, settings.PLAYGROUND_REQUESTS_PER_MINUTE,
                  job["request_id"], repr(now + job["max_seconds"] + 5)],
            client=pipe,
        )
    verdicts = [_refusal(verdict) for verdict in pipe.execute()]
    admitted = [job for job, refusal in zip(jobs, verdicts, strict=True) if refusal is None]
    if admitted:
        try:
            # A worker that comes back after the web side refused these jobs (no_worker) drops them unrun.
            app.send_task(DECODE_TASK, args=[admitted], queue="interactive", expires=settings.PLAYGROUND_QUEUE_WAIT_S)
        except Exception:  # the broker is down: free the slots just taken before telling the clients
            release = app_redis().pipeline(transaction=False)
            for job in admitted:
                release.zrem(keys.running_key(job["user_id"]), job["request_id"])
            release.execute()
            raise
    return verdicts


NO_WORKER = ProtocolError("no_worker", "no decoding worker is running right now; try again in a minute")


def interactive_workers_up() -> bool:
    """Whether a live interactive worker is there (webapp/ops/worker_presence.py), counted at most twice a second.

    A worker killed outright drops out at once (its Redis connection closes with it); a frozen one
    when its key expires (15 s). The relay's watch catches the requests already queued (no_worker,
    worker_lost).
    """
    return queue_workers_up("interactive")


_models: dict[str, tuple[float, dict[str, Any], bool]] = {}  # name -> (when read, job fields, published)
MODEL_CACHE_S = 5.0  # publishing or unpublishing reaches new decodes within this many seconds


def _cached(name: str) -> tuple[float, dict[str, Any], bool] | None:
    """The registry entry read in the last MODEL_CACHE_S seconds, if any."""
    cached = _models.get(name)
    return cached if cached is not None and time.monotonic() - cached[0] <= MODEL_CACHE_S else None


def published_model_cached(name: str) -> dict[str, Any] | None:
    """A published model's job fields when read from the database in the last few seconds, else None.

    Needs neither the database nor the user: a published model is open to every signed-in user.
    """
    cached = _cached(name)
    return cached[1] if cached is not None and cached[2] else None


def model_for(user: Any, name: str) -> dict[str, Any]:
    """The registry entry a decode names, as the job carries it; read from the database every few seconds.

    A class starting thirty decodes at once then costs the database one query, not thirty
    (each a new connection where connections are not kept).
    """
    cached = _cached(name)
    if cached is None:
        model = TrainedModel.objects.filter(name=name).first()
        if model is None:
            _models.pop(name, None)
            raise ProtocolError("unknown_model", unknown_model_text(name))
        fields = model.job_fields()
        cached = _models[name] = (time.monotonic(), fields, model.published)
    _, fields, published = cached
    if not published and not has_role(user, Role.ADMIN):  # as registry.models_visible_to decides
        raise ProtocolError("unknown_model", unknown_model_text(name))
    return fields


def _refusal(verdict: list[Any]) -> ProtocolError | None:
    """The admit script's answer as the error frame a client gets (None: admitted)."""
    if verdict[0] == 1:
        return ProtocolError(
            "too_many_decodes",
            f"you already have {settings.PLAYGROUND_MAX_CONCURRENT} decodes running: wait for one to end or cancel it",
        )
    if verdict[0] == 2:
        wait = max(1, round(float(verdict[1])))
        return ProtocolError(
            "rate_limited",
            f"at most {settings.PLAYGROUND_REQUESTS_PER_MINUTE} decodes a minute: try again in {wait} s",
        )
    return None


def decode_cancel(*, user_id: int, request_ids: list[str]) -> None:
    """Ask the worker to stop these requests before their next step, and free the user's slots now."""
    if not request_ids:
        return
    pipe = app_redis().pipeline(transaction=False)
    for request_id in request_ids:
        pipe.set(keys.cancel_key(request_id), "1", ex=keys.CONTROL_TTL_S)
    pipe.zrem(keys.running_key(user_id), *request_ids)
    pipe.execute()


def decode_step(*, request_ids: list[str]) -> None:
    """Let each of these step-mode requests take one more step."""
    pipe = app_redis().pipeline(transaction=False)
    for request_id in request_ids:
        pipe.rpush(keys.step_key(request_id), "1")
        pipe.expire(keys.step_key(request_id), keys.CONTROL_TTL_S)
    pipe.execute()


def request_resync(request_id: str) -> None:
    """Ask the worker for a `state` frame of this running request (read between two steps)."""
    app_redis().set(keys.resync_key(request_id), "1", ex=keys.CONTROL_TTL_S)


def attention_view(request_id: str, view: View) -> None:
    """Ask the worker to send this running request's attention in another view (read between two steps)."""
    app_redis().set(keys.view_key(request_id), json.dumps(view.to_dict()), ex=keys.CONTROL_TTL_S)


def ended_attention(request_id: str, view: View) -> str | None:
    """The `attention` frame of an ended request in this view, from the copy its worker kept; None: none kept."""
    blob = app_redis().get(keys.attention_key(request_id))
    if blob is None:
        return None
    return orjson.dumps(attention_frame_of_packed(request_id, blob, view)).decode()


def ended_state(request_id: str) -> str | None:
    """The `state` frame the worker kept when this request ended (for ENDED_TTL_S), if any."""
    state = app_redis().get(keys.state_key(request_id))
    return state.decode() if state is not None else None


def playground_models(user: Any) -> list[TrainedModel]:
    """The models this user may decode with, the shipped zh-en ones first."""
    models = list(models_visible_to(user))
    return sorted(models, key=lambda m: (not m.shipped, m.task != "zh-en", m.name))
