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


async def test_an_exercise_is_asked_in_the_consoles_language_and_revealed_with_its_own_right_option_and_why(
        session, instructor, make_student):
    console, _ = await seat(session, instructor)
    right, wrong = await db(make_student)("ann"), await db(make_student)("bob")
    ws_right, _ = await seat(session, right)
    ws_wrong, _ = await seat(session, wrong)
    await console.send_json_to({"type": "exercise", "exercise": "nowhere-9"})
    assert (await until_error(console))["code"] == "bad_params"
    await console.send_json_to({"type": "exercise", "exercise": "encoder-1", "lang": "zh-hans"})
    asked = await until(ws_right, "question")
    assert asked["exercise"] == "encoder-1" and asked["kind"] == "choice"
    assert "√d_k" in asked["prompt"] and len(asked["options"]) == 3
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in option) for option in asked["options"]), asked["options"]
    flatter = asked["options"][1]  # the lesson's right option (the middle one), in Chinese
    await ws_right.send_json_to({"type": "answer", "question": asked["id"], "choice": flatter})
    await until(ws_right, "answered")
    await until(ws_wrong, "question")
    await ws_wrong.send_json_to({"type": "answer", "question": asked["id"], "choice": asked["options"][0]})
    await until(ws_wrong, "answered")
    # Naming another option does not change an exercise's answer: it is the lesson's.
    await console.send_json_to({"type": "reveal", "answer": asked["options"][2]})
    reveal = await until(ws_right, "reveal")
    assert reveal["answer"] == flatter and reveal["you"]["correct"] is True
    assert "√d_k" in reveal["explanation"] and any("\u4e00" <= ch <= "\u9fff" for ch in reveal["explanation"])
    assert (await until(ws_wrong, "reveal"))["you"]["correct"] is False
    assert (await until(console, "reveal"))["counts"] == {asked["options"][0]: 1, flatter: 1, asked["options"][2]: 0}
    for ws in (console, ws_right, ws_wrong):
        await ws.disconnect()


@pytest.mark.services
@pytest.mark.slow
async def test_a_demonstration_runs_once_for_the_class_and_every_screen_draws_it_from_the_session(
        session, instructor, make_student, zh_en, start_worker, client_as, django_user_model):
    from webapp.lesson.models import DemoResult

    await db(start_worker)("demonstrations")
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
    from webapp.classroom.lesson_steps import exercise_ask
    from webapp.classroom.questions import question_reveal, questions_close

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
        session, instructor, make_student, start_worker, client_as, empty_training_queue):
    import asyncio

    from webapp.lesson.models import TrainingRun

    await db(start_worker)("experiments")
    console, _ = await seat(session, instructor)
    ann = await db(make_student)("ann")
    ws_ann, _ = await seat(session, ann)
    await console.send_json_to({"type": "experiment", "kind": "attention"})
    assert (await until_error(console))["code"] == "bad_params"
    await console.send_json_to({"type": "experiment", "kind": "mask"})
    asked = await until(ws_ann, "question")
    assert asked["options"] == ["causal mask", "no mask"] and asked["experiment"]["kind"] == "mask"
    run_id = int(asked["experiment"]["url"].rstrip("/").split("/")[-1])
    await console.send_json_to({"type": "reveal"})  # still training: the reveal waits for the result
    assert (await until_error(console))["code"] == "not_finished"
    await ws_ann.send_json_to({"type": "answer", "question": asked["id"], "choice": "no mask"})
    await until(ws_ann, "answered")
    for _ in range(240):
        run = await db(TrainingRun.objects.get)(pk=run_id)
        if run.status in (TrainingRun.Status.SUCCEEDED, TrainingRun.Status.FAILED):
            break
        await asyncio.sleep(0.5)
    assert run.status == TrainingRun.Status.SUCCEEDED, run.error
    lowest = min(run.result["arms"], key=lambda arm: arm["final_loss"])["label"]
    await console.send_json_to({"type": "reveal"})
    reveal = await until(ws_ann, "reveal")
    assert reveal["answer"] == lowest and reveal["you"]["correct"] is (lowest == "no mask")
    assert reveal["experiment"]["url"] == asked["experiment"]["url"] and 'data-testid="plot-' in reveal["html"]
    assert reveal["experiment"]["kept"] is False  # measured for this question, after it was asked
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
        session, instructor, make_student):
    from webapp.experiments.models import ExperimentRun

    console, _ = await seat(session, instructor)
    ann = await db(make_student)("ann")
    ws_ann, _ = await seat(session, ann)
    await console.send_json_to({"type": "experiment", "kind": "warmup", "lang": "zh-hans"})
    asked = await until(ws_ann, "question")
    assert asked["options"] == ["有预热", "无预热"] and asked["experiment"]["source"] == "experiments"
    run = await db(ExperimentRun.objects.get)(pk=asked["experiment"]["run"])
    assert run.shipped and run.status == "succeeded"  # the result that ships with the app: no worker needed
    arms = run.result["arms"]
    final = {a["label"]: a["run"]["final_loss"] if a["run"]["status"] == "completed" else float("inf") for a in arms}
    lowest = asked["options"][["warmup", "no warmup"].index(min(final, key=final.get))]
    await ws_ann.send_json_to({"type": "answer", "question": asked["id"], "choice": asked["options"][1]})
    await until(ws_ann, "answered")
    await console.send_json_to({"type": "reveal"})
    reveal = await until(ws_ann, "reveal")
    assert reveal["answer"] == lowest and reveal["experiment"]["kept"] is True  # said to be kept, not measured now
    assert 'data-testid="plot-loss"' in reveal["html"]
    for ws in (console, ws_ann):
        await ws.disconnect()
