"""A sweep with more seeds than one experiments worker trains at once, split across the experiments workers.

The run's own task cuts its seeds into parts of `EXPERIMENTS_SWEEP_BATCH` seeds (consecutive seeds: part i is the
same sweep from seed `seed + i * batch`), sends a Celery group of part tasks for every part but the first to the
`experiments` queue, then takes the parts in order itself. Whoever claims a part first in Redis trains it
(SET NX, the claim kept alive while it trains) and stores its result there; the run's task trains every part no one
else took, waits for the others, and merges them (modelcore.experiments.sweep.merge_sweeps). So more free workers
finish sooner, one worker alone finishes as if unsplit (the part tasks it meets later find their parts done), and a
part whose worker died (its claim gone, no result) is trained again by the run's task. Each seed's numbers are its
lone run's in whichever part it trains: the merged result equals the sweep trained at once.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from celery import group
from django.conf import settings

from webapp.celery import app
from webapp.experiments.models import ExperimentRun
from webapp.ops.redis_client import app_redis

PART_TASK = "webapp.experiments.sweep_part"  # webapp.experiments.tasks.sweep_part_task
CLAIM_S = 60  # a part's claim lapses this long after its worker last reported a step (a worker that died)
KEPT_S = 24 * 3600  # how long a part's result waits in Redis for the run's task to merge it
WAIT_EVERY_S = 0.5  # how often the run's task looks at the parts other workers train
Progress = Callable[[dict[str, Any]], None]


def sweep_parts(params: dict[str, Any], batch: int) -> list[dict[str, Any]]:
    """A sweep's canonical parameters -> its parts' (one part when its seeds fit in one batch)."""
    seeds = params["seeds"]
    if seeds <= batch:
        return [params]
    return [{**params, "seed": params["seed"] + start, "seeds": batch} for start in range(0, seeds, batch)]


def _key(run_id: int, index: int, what: str) -> str:
    return f"experiments:sweep:{run_id}:{index}:{what}"


def _progress_key(run_id: int) -> str:
    return f"experiments:sweep:{run_id}:progress"


def _train_part(run_id: int, index: int, params: dict[str, Any], on_progress: Progress | None = None) -> bool:
    """Claim part `index` and train it, its result kept in Redis; False when another worker has it (or had it)."""
    from modelcore.experiments.catalog import run_experiment  # the worker's side: torch loads here

    redis = app_redis()
    claim, done = _key(run_id, index, "claim"), _key(run_id, index, "result")
    if redis.exists(done) or not redis.set(claim, "1", nx=True, ex=CLAIM_S):
        return False
    last = [time.monotonic()]

    def report(info: dict[str, Any]) -> None:
        now = time.monotonic()
        if now - last[0] >= 1.0 or info.get("progress", 0) >= 1:  # the claim kept alive, the progress shared
            last[0] = now
            redis.expire(claim, CLAIM_S)
            redis.hset(_progress_key(run_id), str(index), info.get("progress", 0.0))
        if on_progress is not None:
            on_progress(info)

    result = run_experiment("sweep", params, on_progress=report)
    redis.set(done, json.dumps(result), ex=KEPT_S)
    redis.hset(_progress_key(run_id), str(index), 1.0)
    redis.expire(_progress_key(run_id), KEPT_S)
    return True


def sweep_part_execute(*, run_id: int, index: int) -> None:
    """A part task: train part `index` of a queued or running sweep unless its run ended or someone has it."""
    run = ExperimentRun.objects.filter(pk=run_id).only("status", "params").first()
    if run is None or run.status not in (ExperimentRun.Status.QUEUED, ExperimentRun.Status.RUNNING):
        return
    parts = sweep_parts(run.params, settings.EXPERIMENTS_SWEEP_BATCH)
    if index < len(parts):
        _train_part(run_id, index, parts[index])


def sweep_shared(*, run_id: int, params: dict[str, Any], on_progress: Progress) -> dict[str, Any]:
    """A sweep run's result, its parts trained by this worker and whichever others are free (the run's task)."""
    from modelcore.experiments.sweep import merge_sweeps

    parts = sweep_parts(params, settings.EXPERIMENTS_SWEEP_BATCH)
    if len(parts) == 1:
        from modelcore.experiments.catalog import run_experiment

        return run_experiment("sweep", params, on_progress=on_progress)
    group(app.signature(PART_TASK, args=[run_id, index], queue="experiments")
          for index in range(1, len(parts))).apply_async()
    redis = app_redis()

    def overall(info: dict[str, Any] | None = None) -> None:
        shares = redis.hgetall(_progress_key(run_id))
        done = sum(float(value) for value in shares.values()) / len(parts)
        on_progress({**(info or {}), "progress": min(1.0, done)})

    while True:
        for index, part in enumerate(parts):
            _train_part(run_id, index, part, on_progress=lambda info: overall({k: v for k, v in info.items()
                                                                                 if k != "progress"}))
        results = [redis.get(_key(run_id, index, "result")) for index in range(len(parts))]
        if all(results):
            break
        overall()
        time.sleep(WAIT_EVERY_S)  # a part another worker trains; one whose claim lapsed is taken above
    merged = merge_sweeps([json.loads(text) for text in results])
    redis.delete(_progress_key(run_id), *(_key(run_id, i, what) for i in range(len(parts))
                                          for what in ("claim", "result")))
    return {**merged, "params": params}
