"""A class predicts a comparison trained over seeds: the reveal gives the seeds' verdict, and where the arms overlap
the answer that scores is "no reliable difference", an option every such question offers."""
from __future__ import annotations

import pytest
from channels.db import database_sync_to_async as db
from django.utils import translation

from tests.fixtures.classroom import seat, until
from tests.fixtures.experiments import MACHINE, kept_sweep
from webapp.experiments.figures import machine_words

pytestmark = [pytest.mark.django_db(transaction=True)]


async def test_arms_that_overlap_over_the_seeds_reveal_no_reliable_difference_and_it_scores(
        session, instructor, make_student):
    # The FFN widths end within each other's spread: 2x lowest in 4 seeds, 4x in 3, 1x in 1.
    widths = {"d_ff = 1 × d_model": [0.52, 0.61, 0.55, 0.58, 0.49, 0.60, 0.57, 0.54],
              "d_ff = 2 × d_model": [0.50, 0.57, 0.56, 0.55, 0.51, 0.56, 0.53, 0.56],
              "d_ff = 4 × d_model": [0.51, 0.58, 0.53, 0.57, 0.50, 0.59, 0.52, 0.55]}
    run = await db(kept_sweep)("ffn", widths)
    console, _ = await seat(session, instructor)
    ann, bob = await db(make_student)("ann"), await db(make_student)("bob")
    ws_ann, _ = await seat(session, ann)
    ws_bob, _ = await seat(session, bob, "zh-hans")
    await console.send_json_to({"type": "experiment", "kind": "ffn", "seeds": 8})
    asked = await until(ws_ann, "question")
    assert asked["options"] == [*widths, "no reliable difference"]  # English keys, whatever the screen's language
    assert asked["experiment"]["progress"]["kept"] is True  # the stored sweep: no worker needed
    zh = await until(ws_bob, "question")
    assert zh["labels"]["no reliable difference"] == "没有可靠的差别"
    await ws_ann.send_json_to({"type": "answer", "question": asked["id"], "choice": "no reliable difference"})
    await until(ws_ann, "answered")
    await ws_bob.send_json_to({"type": "answer", "question": asked["id"], "choice": "d_ff = 4 × d_model"})
    await until(ws_bob, "answered")
    await console.send_json_to({"type": "reveal"})
    reveal, reveal_zh = await until(ws_ann, "reveal"), await until(ws_bob, "reveal")
    assert reveal["answer"] == "no reliable difference" and reveal["experiment"]["run"] == run.pk
    assert reveal["you"] == {"answered": True, "correct": True, "score": 1}
    assert reveal_zh["you"] == {"answered": True, "correct": False, "score": 0}  # "more capacity helps": not shown
    told = reveal["experiment"]["sentence"]
    assert told.startswith("No reliable difference: d_ff = 2 × d_model lowest in 4 of 8 seeds: mean 0.54 ± 0.0")
    assert "种子" in reveal_zh["experiment"]["sentence"] and reveal["experiment"]["verdict"]["reliable"] is False
    assert 'data-testid="verdict"' in reveal["html"] and 'data-testid="plot-loss"' in reveal["html"]
    with translation.override("zh-hans"):
        machine_zh = machine_words(MACHINE)
    assert machine_zh == "AMD EPYC，2 核，PyTorch 2.13.0+cpu，1 个线程"  # each screen names the machine in its words
    assert reveal["experiment"]["kept"] is True and reveal["experiment"]["machine"] == machine_words(MACHINE)
    assert reveal_zh["experiment"]["machine"] == machine_zh
    assert f"Computed on {machine_words(MACHINE)}." in reveal["html"] and f"计算于 {machine_zh}" in reveal_zh["html"]
    for ws in (console, ws_ann, ws_bob):
        await ws.disconnect()


async def test_an_arm_lowest_in_every_seed_by_a_wide_gap_is_the_answer(session, instructor, make_student):
    await db(kept_sweep)("mask", {"causal mask": [0.80 + 0.01 * i for i in range(8)],
                                  "no mask": [0.05, 0.04, 0.06, 0.05, 0.15, 0.05, 0.04, 0.06]})
    console, _ = await seat(session, instructor)
    ann = await db(make_student)("ann")
    ws_ann, _ = await seat(session, ann)
    await console.send_json_to({"type": "experiment", "kind": "mask", "seeds": 8})
    asked = await until(ws_ann, "question")
    assert asked["options"] == ["causal mask", "no mask", "no reliable difference"]
    await ws_ann.send_json_to({"type": "answer", "question": asked["id"], "choice": "no reliable difference"})
    await until(ws_ann, "answered")
    await console.send_json_to({"type": "reveal"})
    reveal = await until(ws_ann, "reveal")
    assert reveal["answer"] == "no mask" and reveal["you"]["correct"] is False
    assert reveal["experiment"]["sentence"].startswith("Answer: no mask. no mask lowest in 8 of 8 seeds: mean 0.06 ± 0.01 against ")
    assert [f["option"] for f in reveal["experiment"]["finals"]] == ["causal mask", "no mask"]
    for ws in (console, ws_ann):
        await ws.disconnect()


async def test_a_console_names_the_seeds_a_class_sweep_trains(session, instructor):
    console, _ = await seat(session, instructor)
    for seeds in (3, True, "8"):
        await console.send_json_to({"type": "experiment", "kind": "mask", "seeds": seeds})
        frame = await until(console, "error")
        assert frame["code"] == "bad_params", seeds
    await console.disconnect()


async def test_a_class_reads_a_kept_16_seed_sweep_unless_the_console_names_the_seeds(session, instructor):
    from webapp.experiments.models import ExperimentRun

    kept = await db(kept_sweep)("residual", {"residual": [0.5] * 16, "no residual": [2.5] * 16}, seeds=16)
    console, _ = await seat(session, instructor)
    await console.send_json_to({"type": "experiment", "kind": "residual"})
    asked = await until(console, "question")
    assert asked["experiment"]["progress"]["kept"] is True
    await console.send_json_to({"type": "reveal"})
    assert (await until(console, "reveal"))["experiment"]["run"] == kept.pk
    await console.send_json_to({"type": "experiment", "kind": "residual", "seeds": 4})  # trained anew, 4 seeds
    await until(console, "question")
    run = await db(ExperimentRun.objects.exclude(pk=kept.pk).get)()
    assert run.params["seeds"] == 4 and run.status == ExperimentRun.Status.QUEUED
    await console.disconnect()


async def test_the_ffn_widths_shipped_over_16_seeds_reveal_no_reliable_difference(session, instructor, make_student):
    console, _ = await seat(session, instructor)
    ann = await db(make_student)("ann")
    ws_ann, _ = await seat(session, ann)
    await console.send_json_to({"type": "experiment", "kind": "ffn"})  # no worker: the result that ships is read
    asked = await until(ws_ann, "question")
    assert asked["experiment"]["progress"]["kept"] is True
    await ws_ann.send_json_to({"type": "answer", "question": asked["id"], "choice": "no reliable difference"})
    await until(ws_ann, "answered")
    await console.send_json_to({"type": "reveal"})
    reveal = await until(ws_ann, "reveal")
    assert reveal["answer"] == "no reliable difference" and reveal["you"]["correct"] is True
    assert " of 16 seeds: mean " in reveal["experiment"]["sentence"] and reveal["experiment"]["machine"]
    for ws in (console, ws_ann):
        await ws.disconnect()
