"""The lesson taught live (`lesson`, `demo`, `exercise` console frames): a part of a lesson page on every screen, its
demonstration run once for the class and drawn on every screen from the session, an exercise asked and revealed."""
from __future__ import annotations

import pytest
from channels.db import database_sync_to_async as db

from tests.fixtures.classroom import seat, until

pytestmark = [pytest.mark.django_db(transaction=True)]


async def until_error(ws):
    """The next `error` frame, past the others (presence, the session's events)."""
    while True:
        frame = await ws.receive_json_from(timeout=30)
        if frame["type"] == "error":
            return frame



async def test_a_lesson_part_reaches_every_screen_and_a_late_joiner_and_bad_parts_are_refused(
        session, instructor, make_student):
    console, _ = await seat(session, instructor)
    ann = await db(make_student)("ann")
    ws_ann, first = await seat(session, ann)
    assert first["lesson"] is None and first["demo"] is None  # nothing shown yet
    await console.send_json_to({"type": "lesson", "page": "encoder", "part": "attention"})
    expected = {"type": "lesson", "page": "encoder", "part": "attention", "url": "/lesson/encoder/",
                "fragment": "/lesson/parts/encoder/attention/"}
    shown = [await until(console, "lesson"), await until(ws_ann, "lesson")]
    bob = await db(make_student)("bob")
    ws_bob, late = await seat(session, bob)  # joins afterwards: the part is in the first frame
    for frame in (*shown, late["lesson"]):  # the part itself comes with the frame, rendered once for the class
        assert {k: v for k, v in frame.items() if k != "html"} == expected
        assert frame["html"].startswith('<article class="lesson"><h2 id="attention">') and "<form" not in frame["html"]
    for bad in ({"page": "encoder", "part": "no-such-part"}, {"page": "nowhere", "part": ""}, {"page": 3},
                {"page": "decoder", "part": ["mask"]}):
        await console.send_json_to({"type": "lesson", **bad})
        assert (await until_error(console))["code"] == "bad_params", bad
    await console.send_json_to({"type": "lesson", "page": "residual-norm", "part": ""})  # the socket is still open
    assert (await until(ws_bob, "lesson"))["url"] == "/lesson/residual-norm/"
    for action in ({"type": "lesson", "page": "encoder", "part": "ffn"}, {"type": "demo", "kind": "encoder"},
                   {"type": "exercise", "exercise": "encoder-1"}):
        await ws_ann.send_json_to(action)
        assert (await until_error(ws_ann))["code"] == "forbidden", action
    for ws in (console, ws_ann, ws_bob):
        await ws.disconnect()


def chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


async def test_an_exercise_reaches_each_screen_in_its_own_language_and_its_reveal_gives_the_lessons_answer_and_why(
        session, instructor, make_student):
    console, _ = await seat(session, instructor, "zh-hans")
    right, wrong = await db(make_student)("ann"), await db(make_student)("bob")
    ws_zh, _ = await seat(session, right, "zh-hans")
    ws_en, _ = await seat(session, wrong, "en")
    await console.send_json_to({"type": "exercise", "exercise": "nowhere-9"})
    assert (await until_error(console))["code"] == "bad_params"
    await console.send_json_to({"type": "exercise", "exercise": "encoder-1", "lang": "zh-hans"})
    asked_zh, asked_en = await until(ws_zh, "question"), await until(ws_en, "question")
    for asked in (asked_zh, asked_en):  # the same question, answered with the same keys on every screen
        assert asked["exercise"] == "encoder-1" and asked["kind"] == "choice"
        assert asked["options"] == ["Sharper", "Flatter", "The same"] and "√d_k" in asked["prompt"]
    # ... each in its reader's words, whatever language the console asked in
    assert chinese(asked_zh["prompt"]) and all(chinese(asked_zh["labels"][o]) for o in asked_zh["options"])
    assert not chinese(asked_en["prompt"]) and asked_en["labels"] == {o: o for o in asked_en["options"]}
    await ws_zh.send_json_to({"type": "answer", "question": asked_zh["id"], "choice": "Flatter"})
    await until(ws_zh, "answered")
    await ws_en.send_json_to({"type": "answer", "question": asked_en["id"], "choice": "Sharper"})
    await until(ws_en, "answered")
    # Naming another option does not change an exercise's answer: it is the lesson's, and the reveal says so.
    await console.send_json_to({"type": "reveal", "answer": "The same"})
    reveal_zh, reveal_en = await until(ws_zh, "reveal"), await until(ws_en, "reveal")
    for reveal in (reveal_zh, reveal_en):
        assert reveal["answer"] == "Flatter" and reveal["reveals"] == "exercise" and "√d_k" in reveal["explanation"]
    assert reveal_zh["you"]["correct"] is True and chinese(reveal_zh["explanation"]) and chinese(reveal_zh["labels"]["Flatter"])
    assert reveal_en["you"]["correct"] is False and not chinese(reveal_en["explanation"])
    assert (await until(console, "reveal"))["counts"] == {"Sharper": 1, "Flatter": 1, "The same": 0}
    # A screen that joins after the reveal finds it there, in its own language, with its own result.
    ws_late, late = await seat(session, wrong, "zh-hans")
    assert late["question"]["id"] == asked_zh["id"] and late["my_answer"] == "Sharper"
    assert late["reveal"]["answer"] == "Flatter" and late["reveal"]["you"] == {"answered": True, "correct": False,
                                                                             "score": 0}
    assert chinese(late["reveal"]["explanation"]) and chinese(late["question"]["prompt"])
    # The next question takes its place: a screen that joins now gets that one, and no reveal.
    await console.send_json_to({"type": "question", "kind": "choice", "prompt": "Next?", "options": ["x", "y"]})
    await until(ws_en, "question", prompt="Next?")
    ws_later, later = await seat(session, right, "en")
    assert later["question"]["prompt"] == "Next?" and "reveal" not in later
    for ws in (console, ws_zh, ws_en, ws_late, ws_later):
        await ws.disconnect()


async def test_the_consoles_own_question_is_revealed_as_the_instructors_answer_and_a_plan_step_is_answered_taken(
        session, instructor, make_student):
    console, _ = await seat(session, instructor)
    ws, _ = await seat(session, await db(make_student)("ann"))
    await console.send_json_to({"type": "question", "kind": "choice", "prompt": "Best?", "options": ["A", "B"],
                                "ref": 7})
    assert (await until(console, "taken")) == {"type": "taken", "ref": 7, "action": "question"}
    asked = await until(ws, "question")
    assert "labels" not in asked and asked["options"] == ["A", "B"]  # the instructor's own words, as typed
    await console.send_json_to({"type": "question", "kind": "next_token", "ref": 8})  # no step-mode decode: refused
    refused = await until_error(console)
    assert refused["code"] == "not_stepping" and refused["ref"] == 8
    await console.send_json_to({"type": "reveal", "answer": "B", "ref": "x"})
    assert (await until_error(console))["code"] == "bad_params"
    await console.send_json_to({"type": "reveal", "answer": "B"})
    assert (await until(ws, "reveal"))["reveals"] == "instructor"
    for each in (console, ws):
        await each.disconnect()


@pytest.mark.services
@pytest.mark.slow
async def test_a_demonstration_runs_once_for_the_class_and_every_screen_draws_it_from_the_session(
        session, instructor, make_student, zh_en, shared_worker, client_as, django_user_model):
    from webapp.lesson.models import DemoResult

    await db(shared_worker)("demonstrations")
    console, _ = await seat(session, instructor)
    students = [await db(make_student)(name) for name in ("ann", "bob", "cai")]
    sockets = [(await seat(session, user))[0] for user in students]
    await console.send_json_to({"type": "demo", "kind": "encoder", "sentence": "我的猫追了一只老鼠。", "layer": 1})
    for ws in sockets:
        assert (await until(ws, "demo_running"))["kind"] == "encoder"
        shown = await until(ws, "demo", timeout=60)
        assert shown["n"] == 1 and shown["cached"] is False and shown["params"]["layer"] == 1
        assert 'data-testid="plot-' in shown["html"] and "result" not in shown  # the figures, not the raw result
    assert await db(DemoResult.objects.count)() == 1  # one worker job for the whole class
    for user in students:  # each screen reads the figures from the session, in its own language
        page = (await db(lambda u=user: client_as(u).get(shown["url"]))())
        html = page.content.decode()
        assert page.status_code == 200 and 'data-testid="plot-' in html and "Computed just now" in html
    outsider = await db(django_user_model.objects.create_user)("outsider")
    assert (await db(lambda: client_as(outsider).get(shown["url"]))()).status_code == 403
    await console.send_json_to({"type": "demo", "kind": "encoder", "sentence": "我的猫追了一只老鼠。", "layer": 1})
    again = await until(sockets[0], "demo", timeout=30)
    assert again["n"] == 2 and again["cached"] is True  # the lesson's cache answered it
    assert await db(DemoResult.objects.count)() == 1
    await console.send_json_to({"type": "demo", "kind": "encoder", "sentence": "猫" * 61})  # too long: refused
    error = await until_error(console)
    assert error["code"] == "source_too_long"
    assert (await until(sockets[1], "demo_refused"))["kind"] == "encoder"
    await console.send_json_to({"type": "lesson", "page": "decoder", "part": "cross"})
    assert (await until(sockets[2], "lesson"))["part"] == "cross"
    late, first = await seat(session, await db(make_student)("dan"))
    assert first["demo"] is None  # a new part: the last demonstration went off with the old one
    for ws in (console, late, *sockets):
        await ws.disconnect()


def test_the_history_shows_the_instructor_each_students_results_and_an_exercises_answer_with_why(
        session, instructor, seated, client_as):
    from tests.fixtures.classroom import answer_as, ask_choice
    from webapp.classroom.questions import question_reveal, questions_close
    from webapp.classroom.steps.exercises import exercise_ask

    ann, bob = seated("ann"), seated("bob")
    seated("cai")  # answers nothing
    exercise = exercise_ask(session=session, frame={"exercise": "decoder-1"})
    assert exercise.options[1] == "The causal mask sets their scores to −∞"  # the lesson's right option
    answer_as(session, ann, exercise, exercise.options[1])
    answer_as(session, bob, exercise, exercise.options[0])
    question_reveal(question=exercise, answer=exercise.options[1])
    choice = ask_choice(session, "two", "three")
    answer_as(session, ann, choice, "three")
    questions_close(session=session)  # closed without a reveal: answered, neither right nor wrong

    page = client_as(instructor).get(f"/classroom/{session.code}/history/").content.decode()
    table = page[page.index('data-testid="results-by-student"'):]
    rows = {name: table[table.index(f"<th scope=\"row\">{name}</th>"):].split("</tr>")[0] for name in ("ann", "bob", "cai")}
    assert rows["ann"].count("✓") == 1 and "•" in rows["ann"] and "<td>1</td><td>2</td>" in rows["ann"]
    assert rows["bob"].count("✗") == 1 and "<td>0</td><td>1</td>" in rows["bob"]
    assert rows["cai"].count("–") == 2 and "<td>0</td><td>0</td>" in rows["cai"]
    assert "The lesson's answer:" in page and "(1 right)" in page
    assert "softmax turns into 0" in page  # the exercise's explanation, after its reveal
    mine = client_as(ann).get(f"/classroom/{session.code}/history/").content.decode()
    assert "results-by-student" not in mine and "softmax turns into 0" in mine  # names are the instructor's only


@pytest.mark.services
@pytest.mark.slow
async def test_the_class_predicts_a_training_comparison_and_its_measured_result_is_the_reveal(
        session, instructor, make_student, shared_worker, client_as, empty_training_queue):

    from webapp.experiments.models import ExperimentRun

    await db(shared_worker)("experiments")
    console, _ = await seat(session, instructor)
    ann = await db(make_student)("ann")
    ws_ann, _ = await seat(session, ann)
    await console.send_json_to({"type": "experiment", "kind": "attention"})
    assert (await until_error(console))["code"] == "bad_params"
    await console.send_json_to({"type": "experiment", "kind": "mask", "seeds": 4})  # 4 seeds of each arm, stacked
    asked = await until(ws_ann, "question")
    assert asked["options"] == ["causal mask", "no mask", "no reliable difference"]
    assert asked["experiment"]["kind"] == "mask"
    # Nothing that leads to the run (its id, page or socket streams each arm's loss) before the reveal.
    assert set(asked["experiment"]) == {"kind", "progress"} and asked["experiment"]["progress"]["status"] in (
        "queued", "running")
    await console.send_json_to({"type": "reveal"})  # still training: the reveal waits for the result
    assert (await until_error(console))["code"] == "not_finished"
    await ws_ann.send_json_to({"type": "answer", "question": asked["id"], "choice": "no mask"})
    await until(ws_ann, "answered")
    # Every screen hears how far the run has come, then that its result is in and how long it took.
    seen = []
    while not seen or seen[-1]["status"] not in ("succeeded", "failed"):
        seen.append(await until(ws_ann, "experiment_progress", timeout=240, question=asked["id"]))
    assert seen[-1]["status"] == "succeeded" and seen[-1]["kept"] is False and seen[-1]["took_s"] > 0
    assert all("run" not in frame and "loss" not in frame for frame in seen)
    run = await db(ExperimentRun.objects.filter(kind="sweep", params__switch="mask").latest)("created_at")
    assert run.status == ExperimentRun.Status.SUCCEEDED, run.error
    assert run.params["seeds"] == 4 and all(len(arm["runs"]) == 4 for arm in run.result["arms"])
    verdict = run.result["verdict"]
    panel = (await db(lambda: client_as(ann).get(f"/experiments/runs/{run.pk}/result/"))()).content.decode()
    assert 'data-testid="run-sealed"' in panel and 'data-testid="plot-' not in panel  # not before the reveal
    await console.send_json_to({"type": "reveal"})
    reveal = await until(ws_ann, "reveal")
    assert reveal["answer"] == (verdict["answer"] if verdict["reliable"] else "no reliable difference")
    assert reveal["you"]["correct"] is (reveal["answer"] == "no mask")
    assert reveal["reveals"] == "experiment" and reveal["experiment"]["run"] == run.pk
    assert 'data-testid="plot-' in reveal["html"] and "of 4 seeds" in reveal["experiment"]["sentence"]
    assert reveal["experiment"]["kept"] is False  # measured for this question, after it was asked
    means = {arm["label"]: round(arm["mean"], 4) for arm in verdict["arms"]}
    assert reveal["experiment"]["finals"] == [{"option": o, "loss": means[o]} for o in ("causal mask", "no mask")]
    panel = await db(lambda: client_as(ann).get(reveal["experiment"]["url"]))()
    assert panel.status_code == 200 and 'data-testid="plot-' in panel.content.decode()
    for ws in (console, ws_ann):
        await ws.disconnect()



def test_a_part_reads_the_same_for_every_student_of_a_language_without_a_form_or_a_name(client_as, make_student):
    ann, bob = make_student("ann"), make_student("bob")
    first = client_as(ann).get("/lesson/parts/encoder/layers/")
    text = first.content.decode()
    assert first.status_code == 200 and text.startswith('<article class="lesson"><h2 id="layers">')
    assert "<form" not in text and "csrfmiddlewaretoken" not in text and "ann" not in text
    assert text.count("<h2") == 1 and "exercises" not in text  # this part only
    assert client_as(bob).get("/lesson/parts/encoder/layers/").content == first.content
    cost = client_as(bob).get("/lesson/parts/encoder/cost/").content.decode()  # its form cut, its prose kept
    assert "n² in time and memory" in cost and 'data-testid="cost-memory"' in cost and "<form" not in cost
    top = client_as(ann).get("/lesson/parts/decoder/").content.decode()
    assert 'data-testid="lesson-title"' in top and "<h2" not in top
    chinese = client_as(ann).get("/lesson/parts/encoder/layers/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "在真实模型上试一试" in chinese
    assert client_as(ann).get("/lesson/parts/encoder/nowhere/").status_code == 404
    assert client_as(None).get("/lesson/parts/encoder/layers/").status_code == 302  # signed-in readers only



async def test_an_experiments_page_comparison_is_predicted_and_its_kept_result_revealed_as_kept(
        session, instructor, make_student, client_as):
    from tests.fixtures.experiments import kept_sweep
    from tests.fixtures.sockets import socket_for

    run = await db(kept_sweep)("warmup", {"warmup": [0.1 + 0.01 * s for s in range(8)], "no warmup": [2.9] * 8})
    console, _ = await seat(session, instructor)
    ann = await db(make_student)("ann")
    ws_ann, _ = await seat(session, ann)
    await console.send_json_to({"type": "experiment", "kind": "warmup", "seeds": 8, "lang": "zh-hans"})
    asked = await until(ws_ann, "question")
    assert asked["options"] == ["with warmup", "without warmup", "no reliable difference"]
    assert asked["experiment"]["kind"] == "warmup"
    assert asked["experiment"]["progress"] == {"status": "succeeded", "progress": 1.0, "kept": True}  # no worker
    lowest = "with warmup"  # in every seed, far below
    # While the class predicts it, nothing of the run shows: not its page, not its result, not its socket.
    url = f"/experiments/runs/{run.pk}/"
    for path in (url, f"{url}result/"):
        page = (await db(lambda p=path: client_as(ann).get(p))()).content.decode()
        assert 'data-testid="run-sealed"' in page and 'data-testid="plot-' not in page, path
    watcher = await socket_for(f"/ws/experiments/{run.pk}/", ann)
    assert (await watcher.connect())[0]
    assert (await until_error(watcher))["code"] == "not_found"
    await watcher.disconnect()
    await ws_ann.send_json_to({"type": "answer", "question": asked["id"], "choice": asked["options"][1]})
    await until(ws_ann, "answered")
    await console.send_json_to({"type": "reveal"})
    reveal = await until(ws_ann, "reveal")
    assert reveal["answer"] == lowest and reveal["experiment"]["kept"] is True  # said to be kept, not measured now
    page = (await db(lambda: client_as(ann).get(f"{url}result/"))()).content.decode()
    assert 'data-testid="plot-' in page and "run-sealed" not in page  # the reveal unseals it
    assert reveal["experiment"]["source"] == "experiments" and reveal["experiment"]["run"] == run.pk
    assert 'data-testid="plot-loss"' in reveal["html"]
    # A student who reloads gets the room as it is: the revealed result in the lesson's panel, with their own result.
    again, room = await seat(session, ann, "zh-hans")
    assert room["demo"] is None and room["reveal"]["experiment"]["run"] == run.pk
    assert 'data-testid="plot-loss"' in room["reveal"]["html"] and "有预热" in room["question"]["labels"].values()
    assert room["reveal"]["you"]["correct"] is (lowest == asked["options"][1])
    await again.disconnect()
    for ws in (console, ws_ann):
        await ws.disconnect()
