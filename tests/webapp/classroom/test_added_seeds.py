"""The class fills the plot: after the reveal of a comparison predicted over seeds, a student adds their own seed (a
one-seed sweep of the question's configuration, on their experiments quota); when it ends every screen gets its
curves and the verdict over every seed, in its own language, and a screen that joins later sees them too. The console
closes and reopens the window; a cap per session, one seed pending per student, refusals that keep the socket open."""
from __future__ import annotations

import pytest
from channels.db import database_sync_to_async as db

from tests.fixtures.classroom import seat, until
from tests.fixtures.experiments import MACHINE, kept_sweep, seed_result

pytestmark = [pytest.mark.django_db(transaction=True)]

# The mask comparison over 8 seeds: no mask lowest in every seed, far below: the answer.
MASK = {"causal mask": [0.80 + 0.01 * i for i in range(8)], "no mask": [0.05, 0.04, 0.06, 0.05, 0.15, 0.05, 0.04, 0.06]}


async def error_of(ws) -> dict:
    return await until(ws, "error")


async def revealed(session, instructor, *students):
    """The mask comparison asked, answered by no one, revealed: the console's socket and each student's."""
    console, _ = await seat(session, instructor)
    screens = [(await seat(session, student, language))[0] for student, language in students]
    await console.send_json_to({"type": "experiment", "kind": "mask", "seeds": 8})
    asked = await until(console, "question")
    await console.send_json_to({"type": "reveal"})
    for ws in (console, *screens):
        await until(ws, "reveal")
        opened = await until(ws, "seeds")
        assert opened["question"] == asked["id"] and opened["open"] is True and opened["left"] == 30
    return asked, console, screens


async def test_a_students_seed_reaches_every_screen_with_the_verdict_over_every_seed_and_a_late_joiner_sees_it(
        session, instructor, make_student):
    from webapp.classroom.models import AddedSeed
    from webapp.classroom.steps.seeds import student_seed
    from webapp.experiments.models import ExperimentRun

    run = await db(kept_sweep)("mask", MASK)
    ann, bob = await db(make_student)("ann"), await db(make_student)("bob")
    asked, console, (ws_ann, ws_bob) = await revealed(session, instructor, (ann, None), (bob, "zh-hans"))
    await ws_ann.send_json_to({"type": "add_seed", "question": asked["id"]})
    queued = await until(ws_ann, "seed_queued")
    assert queued["seed"] == student_seed(ann.pk, 0) and queued["seed"] >= 1000  # never one of the class's 0..15
    for ws in (console, ws_ann, ws_bob):  # the console counts it as pending
        assert (await until(ws, "seeds", pending=1))["added"] == 0
    added = await db(AddedSeed.objects.select_related("run").get)()
    assert added.run.status == ExperimentRun.Status.QUEUED and added.run.owner_id == ann.pk  # on ann's quota
    assert added.run.params == {**run.params, "seed": queued["seed"], "seeds": 1}  # the question's configuration
    # The seed ends with the causal mask lower: no mask is lowest in 8 of 9 seeds, under 90 %.
    await db(seed_result)(added.run_id, {"causal mask": 0.02, "no mask": 0.9})
    got = [await until(ws, "seed_added", timeout=10) for ws in (console, ws_ann, ws_bob)]
    for frame in got:
        assert frame["question"] == asked["id"] and frame["seed"] == queued["seed"] and frame["status"] == "succeeded"
        assert frame["experiment"]["verdict"]["seeds"] == 9 and frame["experiment"]["verdict"]["reliable"] is False
        assert frame["experiment"]["added"] == 1 and frame["seeds"]["added"] == 1 and frame["seeds"]["pending"] == 0
        assert str(queued["seed"]) in frame["html"]  # its curve, named by its seed, among the class's
        assert 'data-testid="plot-loss"' in frame["html"]
    assert got[1]["experiment"]["sentence"].startswith(
        "With 1 seed the class added (9 in all): No reliable difference: no mask lowest in 8 of 9 seeds")
    assert "种子" in got[2]["experiment"]["sentence"] and "No reliable" not in got[2]["experiment"]["sentence"]
    # Whoever reloads sees the seeds the class added: the curves, the verdict over every seed; the score stays.
    again, room = await seat(session, bob, "zh-hans")
    assert room["reveal"]["answer"] == "no mask" and room["reveal"]["experiment"]["added"] == 1
    assert room["reveal"]["experiment"]["verdict"]["seeds"] == 9 and f"{queued['seed']}" in room["reveal"]["html"]
    assert room["seeds"]["added"] == 1 and room["seeds"]["left"] == 29
    for ws in (again, console, ws_ann, ws_bob):
        await ws.disconnect()


async def test_adding_a_seed_is_refused_with_a_reason_and_the_socket_stays_open(
        session, instructor, make_student, settings):
    from webapp.classroom.models import AddedSeed

    await db(kept_sweep)("mask", MASK)
    ann, bob = await db(make_student)("ann"), await db(make_student)("bob")
    console, _ = await seat(session, instructor)
    ws_ann, _ = await seat(session, ann)
    await console.send_json_to({"type": "experiment", "kind": "mask", "seeds": 8})
    asked = await until(ws_ann, "question")
    await ws_ann.send_json_to({"type": "add_seed", "question": asked["id"]})  # before the reveal
    assert (await error_of(ws_ann))["code"] == "not_revealed"
    await console.send_json_to({"type": "reveal"})
    await until(ws_ann, "seeds")
    await console.send_json_to({"type": "add_seed"})  # the instructor takes no seat
    assert (await error_of(console))["code"] == "forbidden"
    await ws_ann.send_json_to({"type": "add_seed", "question": asked["id"] + 1})  # not the question on screen
    assert (await error_of(ws_ann))["code"] == "not_revealed"
    await console.send_json_to({"type": "seeds", "open": "no"})
    assert (await error_of(console))["code"] == "bad_params"
    await console.send_json_to({"type": "seeds", "open": False})  # the console closes the window: every screen hears
    assert (await until(ws_ann, "seeds"))["open"] is False
    await ws_ann.send_json_to({"type": "add_seed"})
    assert (await error_of(ws_ann))["code"] == "seeds_closed"
    await console.send_json_to({"type": "seeds", "open": True})
    assert (await until(ws_ann, "seeds"))["open"] is True
    await ws_ann.send_json_to({"type": "add_seed"})
    await until(ws_ann, "seed_queued")
    await ws_ann.send_json_to({"type": "add_seed"})  # one pending seed per student
    assert (await error_of(ws_ann))["code"] == "seed_pending"
    settings.EXPERIMENTS_DAILY_QUOTA = 0
    ws_bob, _ = await seat(session, bob)
    await ws_bob.send_json_to({"type": "add_seed"})  # on the student's own experiments quota
    assert (await error_of(ws_bob))["code"] == "quota"
    settings.EXPERIMENTS_DAILY_QUOTA, settings.CLASSROOM_SEEDS_PER_SESSION = 3, 1
    await ws_bob.send_json_to({"type": "add_seed"})  # the session's cap: ann's seed was the one
    refused = await error_of(ws_bob)
    assert refused["code"] == "seeds_full" and "1 added seeds" in refused["message"]
    await ws_bob.send_json_to({"type": "add_seed"})  # still open: the socket answers, the same way
    assert (await error_of(ws_bob))["code"] == "seeds_full"
    assert await db(AddedSeed.objects.count)() == 1
    for ws in (console, ws_ann, ws_bob):
        await ws.disconnect()


def test_a_students_seeds_are_their_own_and_never_the_class_s():
    from webapp.classroom.steps.seeds import SEEDS_PER_STUDENT, student_seed
    from webapp.experiments.pages import SHIPPED_SEEDS

    seeds = {student_seed(user, k) for user in range(1, 40) for k in range(SEEDS_PER_STUDENT)}
    assert len(seeds) == 39 * SEEDS_PER_STUDENT and min(seeds) > SHIPPED_SEEDS


def test_a_one_seed_sweep_merges_into_the_class_s_verdict():
    from modelcore.experiments.merge import merge_sweeps
    from modelcore.experiments.spec import canonical_params

    assert canonical_params("sweep", {"switch": "mask", "seed": 1100, "seeds": 1})["seeds"] == 1

    def part(seeds, finals):
        return {"steps": 3, "seeds": seeds, "machine": MACHINE,
                "arms": [{"label": label, "seeds": seeds, "final_losses": losses, "seconds": 1.0,
                          "runs": [{"seed": s, "loss": [1.0, loss], "final_loss": loss, "status": "completed"}
                                   for s, loss in zip(seeds, losses, strict=True)]}
                         for label, losses in finals.items()]}

    merged = merge_sweeps([part([0, 1], {"a": [0.1, 0.2], "b": [0.9, 0.8]}), part([1100], {"a": [0.3], "b": [0.7]})])
    assert merged["seeds"] == [0, 1, 1100] and merged["verdict"]["seeds"] == 3 and merged["machine"] == MACHINE
    assert [len(arm["runs"]) for arm in merged["arms"]] == [3, 3]


@pytest.mark.services
@pytest.mark.slow
async def test_a_student_adds_a_seed_a_worker_trains_it_and_two_screens_get_its_curve_and_the_new_verdict(
        session, instructor, make_student, start_worker, empty_training_queue):
    """Real processes: the experiments worker trains the student's seed (the question's tiny configuration)."""
    from webapp.classroom.models import AddedSeed
    from webapp.classroom.questions import QuestionSpec, question_open
    from webapp.classroom.wording import asked_words

    run = await db(kept_sweep)("mask", MASK)
    tiny = {**run.params, "steps": 6, "n_train": 100, "eval_size": 8, "eval_every": 3}

    def ask_tiny():  # the class's result, kept, of a configuration a worker trains in a second or two
        from webapp.experiments.services import params_key

        run.params, run.params_key = tiny, params_key("sweep", tiny)
        run.result = {**run.result, "params": tiny}
        run.save()
        words = asked_words(experiment="mask")
        question = question_open(session=session, spec=QuestionSpec("choice", words["prompt"], words["options"]),
                                 request_id=None, seq=None)
        question.experiment_run = run
        question.save(update_fields=["experiment_run"])
        return question

    await db(start_worker)("experiments")
    ann, bob = await db(make_student)("ann"), await db(make_student)("bob")
    question = await db(ask_tiny)()
    console, _ = await seat(session, instructor)
    ws_ann, _ = await seat(session, ann)
    ws_bob, _ = await seat(session, bob, "zh-hans")
    await console.send_json_to({"type": "reveal"})
    for ws in (ws_ann, ws_bob):
        await until(ws, "seeds", question=question.pk)
    await ws_ann.send_json_to({"type": "add_seed", "question": question.pk})
    seed = (await until(ws_ann, "seed_queued"))["seed"]
    shown = [await until(ws, "seed_added", timeout=180) for ws in (ws_ann, ws_bob)]
    added = await db(AddedSeed.objects.select_related("run").get)()
    assert added.run.status == "succeeded", added.run.error
    assert added.run.result["seeds"] == [seed] and len(added.run.result["arms"]) == 2  # the seed in every arm
    for frame in shown:
        assert frame["status"] == "succeeded" and frame["experiment"]["verdict"]["seeds"] == 9
        assert frame["seeds"]["added"] == 1 and str(seed) in frame["html"]
    assert "With 1 seed the class added (9 in all)" in shown[0]["experiment"]["sentence"]
    assert "种子" in shown[1]["experiment"]["sentence"]
    for ws in (console, ws_ann, ws_bob):
        await ws.disconnect()
