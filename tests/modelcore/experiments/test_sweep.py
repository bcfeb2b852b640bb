"""Seeds trained stacked give each seed the curve its lone run gives (same seed, same batches)."""
from __future__ import annotations

import pytest

from modelcore.experiments import torch_threads
from modelcore.experiments.comparisons import COMPARISONS, PROBE_BASE, Arm, comparison_arms
from modelcore.experiments.runs import train_probe
from modelcore.experiments.sweep import sweep, train_stacked
from modelcore.lesson.training import BASE, _train_arm

SEEDS = (0, 1, 2, 3)
STEPS = 3
TOLERANCE = 1e-4  # relative, at every logged step


def _lone_losses(arm: Arm, seed: int) -> list[float]:
    """The run as the pages train it today, alone: the lesson's loop, or the experiments' train_probe."""
    config = arm.config.replace(seed=seed)
    if arm.loop == "lesson":
        return _train_arm(config, arm.causal, lambda _step, _loss: None)["loss"]
    return train_probe(config)["loss"]


def _short(arm: Arm, steps: int = STEPS) -> Arm:
    return Arm(arm.label, arm.config.replace(steps=steps), arm.causal, arm.loop)


CASES = [pytest.param(name, i, id=f"{name}-{arm.label}")
         for name in COMPARISONS for i, arm in enumerate(comparison_arms(name))]
# Layouts no page compares but a student's own run can ask for; and a training set smaller than two batches, so
# that a seed's epoch ends with a short batch while another seed's does not (filler rows).
EXTRA = [
    pytest.param(Arm("post, no residual", PROBE_BASE.replace(layers=2, residual=False)), id="post-no-residual"),
    pytest.param(Arm("rmsnorm", PROBE_BASE.replace(layers=2, norm="rmsnorm", norm_position="pre")), id="rmsnorm"),
    pytest.param(Arm("short epochs", BASE.replace(n_train=45), loop="lesson"), id="short-epochs"),
]


def _assert_same_curves(arm: Arm) -> None:
    with torch_threads(1):
        stacked = train_stacked(arm, SEEDS)
        for run, seed in zip(stacked["runs"], SEEDS, strict=True):
            lone = _lone_losses(arm, seed)
            assert run["seed"] == seed and len(run["loss"]) == len(lone) == arm.config.steps
            for step, (mine, theirs) in enumerate(zip(run["loss"], lone, strict=True), start=1):
                assert abs(mine - theirs) <= TOLERANCE * abs(theirs), (seed, step, mine, theirs)
    # Different seeds are different runs, not copies of one.
    assert len({run["loss"][0] for run in stacked["runs"]}) == len(SEEDS)


@pytest.mark.parametrize(("name", "index"), CASES)
def test_each_seed_of_every_comparison_matches_its_lone_run(name, index):
    _assert_same_curves(_short(comparison_arms(name)[index]))


@pytest.mark.parametrize("arm", EXTRA)
def test_other_layouts_and_short_epochs_match_their_lone_runs(arm):
    _assert_same_curves(_short(arm, steps=STEPS if arm.config.n_train > 100 else 4))


@pytest.mark.parametrize("arm", [pytest.param(comparison_arms("norm_position")[0], id="post-ln-no-warmup"), EXTRA[2]])
def test_linear_layers_seed_by_seed_as_on_a_cpu_without_avx512_match_their_lone_runs_too(arm, monkeypatch):
    """Where a batched product over padded rows rounds otherwise (MKL's AVX2 kernels), each seed's linear layers
    take one product over its own rows: the curves are the lone runs' there too, whatever this CPU runs."""
    monkeypatch.setattr("modelcore.experiments.sweep.SEED_BY_SEED_PRODUCTS", True)
    _assert_same_curves(_short(arm, steps=STEPS if arm.config.n_train > 100 else 4))


@pytest.fixture(autouse=True)
def _no_validation(monkeypatch):
    """The lone probe runs' periodic validation (greedy decoding) changes nothing in training: skipped, for time."""
    monkeypatch.setattr("modelcore.experiments.runs._evaluate", lambda _probe, step: {"step": step})


def test_the_lesson_s_comparisons_stack_the_lesson_s_own_settings():
    assert comparison_arms("mask")[0].config == BASE
    assert [a.config.d_ff for a in comparison_arms("ffn")] == [32, 64, 128]


def test_a_sweep_returns_every_seed_of_every_arm_and_a_verdict():
    with torch_threads(1):
        result = sweep("mask", 2, steps=2)
    assert [arm["label"] for arm in result["arms"]] == ["causal mask", "no mask"]
    assert all(arm["seeds"] == [0, 1] and len(arm["final_losses"]) == 2 for arm in result["arms"])
    assert result["verdict"]["seeds"] == 2


@pytest.mark.parametrize("seeds", [[], [1, 1], [-1]])
def test_bad_seeds_are_refused(seeds):
    with pytest.raises(ValueError):
        train_stacked(comparison_arms("mask")[0], seeds)


def test_eight_seeds_grouped_by_batch_length_match_their_lone_runs_too():
    """From 8 seeds on, seeds with similar batch lengths run in groups, each padded to its own longest batch."""
    arm = _short(comparison_arms("mask")[1])
    with torch_threads(1):
        stacked = train_stacked(arm, range(8))
        for run in stacked["runs"]:
            lone = _lone_losses(arm, run["seed"])
            assert all(abs(a - b) <= TOLERANCE * b for a, b in zip(run["loss"], lone, strict=True))


def test_a_student_s_sweep_run_trains_both_arms_with_every_seed_and_judges_them():
    from modelcore.experiments import run_experiment

    seen = []
    params = {"task": "reverse", "layers": 1, "d_model": 32, "n_heads": 4, "d_ff": 64, "steps": 3, "seeds": 4,
              "seed": 5, "switch": "residual", "norm_position": "pre"}
    with torch_threads(1):
        result = run_experiment("sweep", params, on_progress=seen.append)
    assert result["kind"] == "sweep" and result["params"]["seeds"] == 4
    assert [arm["label"] for arm in result["arms"]] == ["residual", "no residual"]
    assert all([run["seed"] for run in arm["runs"]] == [5, 6, 7, 8] for arm in result["arms"])
    assert all(len(run["loss"]) == 3 for arm in result["arms"] for run in arm["runs"])
    assert result["verdict"]["seeds"] == 4 and seen[-1]["progress"] == 1.0


@pytest.mark.parametrize("seeds", [2, 3, 32, True])  # 1: a lone seed (a student's own, added to a class's sweep)
def test_a_sweep_asks_for_4_8_or_16_seeds(seeds):
    from modelcore.experiments.spec import canonical_params

    with pytest.raises(ValueError):
        canonical_params("sweep", {"seeds": seeds})
    assert canonical_params("sweep", {})["seeds"] == 8


def test_a_sweep_trains_the_lessons_comparisons_with_their_arms_and_loop():
    from modelcore.experiments.catalog import run_experiment
    from modelcore.experiments.spec import canonical_params

    lesson = {k: v for k, v in BASE.to_dict().items() if k != "betas"}
    assert canonical_params("sweep", {**lesson, "switch": "ffn", "d_ff": 128})["d_ff"] == 32  # the arms' choice
    with pytest.raises(ValueError):
        canonical_params("compare", {"switch": "mask"})  # a sweep's comparison, not a switch of two runs
    with torch_threads(1):
        result = run_experiment("sweep", {**lesson, "steps": 2, "seeds": 4, "switch": "mask"})
    assert [arm["label"] for arm in result["arms"]] == ["causal mask", "no mask"]
    assert [arm["causal"] for arm in result["arms"]] == [True, False]
    assert result["arms"][1]["runs"][2]["loss"] == _lone_losses(_short(comparison_arms("mask")[1], 2), 2)
    assert result["verdict"]["seeds"] == 4 and ", torch 2." in result["machine"]  # what computed it


def test_a_sweep_split_into_parts_merges_into_the_sweep_trained_at_once():
    from modelcore.experiments.catalog import run_experiment
    from modelcore.experiments.sweep import merge_sweeps

    params = {"task": "reverse", "layers": 1, "d_model": 32, "n_heads": 4, "d_ff": 64, "steps": 3, "switch": "warmup"}
    with torch_threads(1):
        whole = run_experiment("sweep", {**params, "seeds": 8})
        parts = [run_experiment("sweep", {**params, "seed": seed, "seeds": 4}) for seed in (0, 4)]
    merged = merge_sweeps(parts)
    assert merged["seeds"] == list(range(8)) and merged["verdict"] == whole["verdict"]
    for mine, theirs in zip(merged["arms"], whole["arms"], strict=True):
        assert [run["loss"] for run in mine["runs"]] == [run["loss"] for run in theirs["runs"]]  # to the last bit
        assert mine["final_losses"] == theirs["final_losses"] and mine["seeds"] == list(range(8))
    with pytest.raises(ValueError):
        merge_sweeps([])
