"""A sweep with more seeds than one worker's batch is split in parts across the experiments workers (a Celery group):
the parts another worker trained are merged, not trained again, and the result is the sweep trained at once."""
from __future__ import annotations

import json
import time

import pytest

from modelcore.experiments import canonical_params, catalog
from webapp.experiments.models import ExperimentRun
from webapp.experiments.services import experiment_run_execute, params_key
from webapp.experiments.sweep_parts import PART_TASK, sweep_part_execute, sweep_parts
from webapp.ops.redis_client import app_redis

pytestmark = pytest.mark.django_db

TINY = {"task": "reverse", "layers": 1, "d_model": 32, "n_heads": 4, "d_ff": 64, "steps": 3, "switch": "norm_position",
        "seeds": 8}


def test_a_sweep_is_cut_into_parts_of_one_worker_s_batch_of_consecutive_seeds():
    params = canonical_params("sweep", {**TINY, "seeds": 16, "seed": 2})
    assert [(p["seed"], p["seeds"]) for p in sweep_parts(params, 8)] == [(2, 8), (10, 8)]
    assert [(p["seed"], p["seeds"]) for p in sweep_parts(params, 4)] == [(2, 4), (6, 4), (10, 4), (14, 4)]
    assert sweep_parts(params, 16) == [params]
    assert all(canonical_params("sweep", p) == p for p in sweep_parts(params, 4))  # each part a sweep of its own


@pytest.fixture
def split_run(settings, student, empty_training_queue, monkeypatch):
    """An 8-seed sweep run on workers that train 4 seeds at a time; `trained` lists the parts trained here."""
    settings.EXPERIMENTS_SWEEP_BATCH = 4
    params = canonical_params("sweep", TINY)
    run = ExperimentRun.objects.create(kind="sweep", params=params, params_key=params_key("sweep", params),
                                       owner=student)
    real, trained = catalog.run_experiment, []

    def counted(kind, part, **options):
        trained.append(part["seed"])
        return real(kind, part, **options)

    monkeypatch.setattr(catalog, "run_experiment", counted)
    return run, trained, real


def test_a_part_another_worker_trained_is_merged_and_the_result_is_the_sweep_trained_at_once(split_run):
    run, trained, real = split_run
    sweep_part_execute(run_id=run.pk, index=1)  # another worker takes the part its group message asked for
    assert trained == [4]
    experiment_run_execute(run_id=run.pk)  # the run's own task: the first part, then the merge
    run.refresh_from_db()
    assert run.status == ExperimentRun.Status.SUCCEEDED and trained == [4, 0]
    queued = app_redis().lrange("experiments", 0, -1)
    assert len(queued) == 1 and PART_TASK.encode() in queued[0]  # the group: one part task for the other part
    whole = real("sweep", run.params)
    assert run.result["params"] == run.params and run.result["seeds"] == list(range(8))
    assert run.result["verdict"] == json.loads(json.dumps(whole["verdict"]))  # as the row stores it
    for mine, theirs in zip(run.result["arms"], whole["arms"], strict=True):
        assert [r["loss"] for r in mine["runs"]] == [r["loss"] for r in theirs["runs"]]
    sweep_part_execute(run_id=run.pk, index=1)  # the part task delivered late finds its run ended
    assert trained == [4, 0] and not app_redis().keys(f"experiments:sweep:{run.pk}:*")


def test_a_part_whose_worker_died_is_trained_by_the_run_s_task(split_run):
    run, trained, _ = split_run
    app_redis().set(f"experiments:sweep:{run.pk}:1:claim", "1", ex=1)  # claimed, then its worker died
    experiment_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == ExperimentRun.Status.SUCCEEDED and trained == [0, 4] and len(run.result["arms"][0]["runs"]) == 8


@pytest.mark.django_db(transaction=True)
@pytest.mark.services
@pytest.mark.slow
def test_two_experiments_workers_share_a_sweep_s_parts(student, start_worker, empty_training_queue):
    from webapp.experiments.tasks import run_experiment_task

    workers = [start_worker("experiments", env={"EXPERIMENTS_SWEEP_BATCH": "4"}) for _ in range(2)]
    params = canonical_params("sweep", {**TINY, "steps": 40})
    run = ExperimentRun.objects.create(kind="sweep", params=params, params_key=params_key("sweep", params),
                                       owner=student)
    run_experiment_task.delay(run.pk)
    deadline = time.monotonic() + 240
    while run.status not in ("succeeded", "failed") and time.monotonic() < deadline:
        time.sleep(0.5)
        run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert [len(arm["runs"]) for arm in run.result["arms"]] == [8, 8] and run.result["verdict"]["seeds"] == 8
    logs = [worker.log.read_text() for worker in workers]
    ran = [("webapp.experiments.run[" in log, "webapp.experiments.sweep_part[" in log) for log in logs]
    assert sorted(ran) == [(False, True), (True, False)], ran  # the run on one worker, its other part on the other


def test_every_comparison_has_a_sweep_with_its_page_s_settings():
    from modelcore.experiments.comparisons import COMPARISONS, LESSON_BASE
    from webapp.experiments.pages import PAGES, sweep_preset

    lesson = canonical_params("sweep", sweep_preset("mask", 16))
    assert {k: lesson[k] for k in LESSON_BASE.to_dict()} == LESSON_BASE.to_dict() | {"betas": [0.9, 0.98]}
    warmup = canonical_params("sweep", sweep_preset("warmup", 16))
    single = canonical_params(*PAGES["norm-position"]["compare_warmup"])
    assert {k: v for k, v in warmup.items() if k != "seeds"} == single  # the page's run, over 16 seeds
    shipped = {**PAGES["lesson-sweeps"], **PAGES["sweeps"]}
    assert sorted(shipped) == sorted(COMPARISONS) and {p["seeds"] for _, p in shipped.values()} == {16}
