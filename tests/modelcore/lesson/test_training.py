"""The lesson's tiny training comparisons."""
from __future__ import annotations

import pytest

from modelcore.experiments import torch_threads
from modelcore.lesson import run_training


@pytest.mark.slow
def test_without_the_causal_mask_training_loss_is_lower_and_generation_worse():
    seen = []
    with torch_threads(1):
        result = run_training("mask", {}, on_progress=seen.append)
    causal, unmasked = result["arms"]
    assert (causal["label"], unmasked["label"]) == ("causal mask", "no mask")
    assert unmasked["final_loss"] < causal["final_loss"]
    assert unmasked["teacher_forced_accuracy"] > causal["teacher_forced_accuracy"]
    assert unmasked["exact_match"] < causal["exact_match"]
    assert seen[-1]["progress"] == 1.0 and {s["arm"] for s in seen} == {"causal mask", "no mask"}
    # A seed's figures move with the machine's arithmetic (docs/lesson.md says so); the figures docs/lesson.md quotes
    # for the comparison are the shipped 16-seed sweep's, read from the file it ships in.
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    doc = " ".join((root / "docs/lesson.md").read_text(encoding="utf-8").split())
    sweep = json.loads((root / "webapp/experiments/defaults/lesson-sweeps.json").read_text(encoding="utf-8"))["mask"]
    verdict = sweep["result"]["verdict"]
    leader = next(arm for arm in verdict["arms"] if arm["label"] == verdict["leader"])
    assert verdict["leader"] == "no mask" and verdict["reliable"]
    assert f"without the mask lowest in {leader['lowest']} of {verdict['seeds']}" in doc


@pytest.mark.slow
def test_ffn_widths_train_side_by_side():
    with torch_threads(1):
        result = run_training("ffn", {"steps": 20})
    assert [a["d_ff"] for a in result["arms"]] == [32, 64, 128]
    params = [a["parameters"] for a in result["arms"]]
    assert params[0] < params[1] < params[2]
    assert all(len(a["loss"]) == 20 for a in result["arms"])


def test_bad_requests_are_refused():
    with pytest.raises(ValueError):
        run_training("nope", {})
    with pytest.raises(ValueError):
        run_training("mask", {"steps": 10_000})


@pytest.mark.slow
def test_the_ffn_exercise_says_what_two_seeds_of_the_default_comparison_show():
    """The exercise's claims, on the real model: no width ends lowest on every seed (seed 1: the widest lowest,
    seed 0: not the widest), and the parameter counts it quotes. Which width ends lowest at seed 0 moves with the
    machine's arithmetic (the narrowest on one machine, 2x on another), so the exercise does not say."""
    from tests.fixtures.lesson import in_both
    from webapp.lesson.content import EXERCISES, exercise_question

    with torch_threads(1):
        seed0, seed1 = (run_training("ffn", {"seed": seed}) for seed in (0, 1))
    losses0 = [arm["final_loss"] for arm in seed0["arms"]]
    losses1 = [arm["final_loss"] for arm in seed1["arms"]]
    assert losses0[-1] != min(losses0) and losses1[-1] == min(losses1)
    narrow, widest = seed0["arms"][0]["parameters"], seed0["arms"][-1]["parameters"]
    assert round(widest / narrow - 1, 1) in (0.6, 0.7)  # about two thirds more
    answer = in_both(next(e["a"] for e in EXERCISES["questions"] if e["id"] == "questions-2"))
    for text in answer.values():
        assert f"{widest:,} " in text and f"{narrow:,}" in text
    assert "with seed 1 the widest ends lowest, with seed 0 it does not" in answer["en"]
    assert "种子 1 时最宽的最低，种子 0 时不是" in answer["zh"]
    assert exercise_question("questions-2")["right"] == "Neither: the order changes with the seed"
