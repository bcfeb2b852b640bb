"""Chromium: the instructor teaches the lesson live from a five-step plan (a lesson part, its demonstration, an
exercise, a decode with a prediction, an experiment with a prediction). One student on a 360 px phone reads in
Chinese; another, in English, joins late and is caught up; a third reloads after the last reveal. Each sees every
step in their own language (the part, the questions' words, the reveals' words), the demonstration the console ran
once for the class, the experiment's progress, the reveals saying whose answer they give, and Chinese drawn in a
Chinese font (not boxes)."""
from __future__ import annotations

import time

import pytest

from tests.fixtures.browser import draw_every_figure, settled
from tests.fixtures.demo import console_opened, sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SENTENCE = "我的猫追了一只老鼠。"
PLAN = [{"do": "lesson", "page": "encoder", "part": "layers"},
        {"do": "demo", "kind": "encoder", "sentence": SENTENCE},
        {"do": "exercise", "exercise": "encoder-1", "note": "Let them argue before anyone answers."},
        {"do": "decode", "source": "我们看见我的猫。", "step_mode": True},
        {"do": "question", "kind": "next_token"},
        {"do": "experiment", "kind": "mask", "seeds": 4}]
OPTIONS = "[data-testid=question-options] button"


def wait_text(page, testid: str, text: str) -> None:
    page.wait_for_function(f"document.querySelector('[data-testid={testid}]')?.textContent.includes({text!r})")


# At 360 px: a cell narrower than 3 characters (a column squeezed to a character a line), and a plot's axis title
# drawn over its legend, by their boxes on screen.
LAYOUT_FAULTS = """(root) => {
  const faults = [];
  const em = parseFloat(getComputedStyle(document.body).fontSize);
  for (const cell of root.querySelectorAll("td, th")) {
    const text = cell.textContent.trim();
    if (text.length > 2 && cell.getBoundingClientRect().width < 3 * em) faults.push(`narrow cell: ${text.slice(0, 30)}`);
  }
  const meets = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  for (const chart of root.querySelectorAll(".js-plotly-plot")) {
    const legend = chart.querySelector(".legend")?.getBoundingClientRect();
    for (const title of chart.querySelectorAll(".xtitle, .ytitle")) {
      if (legend && legend.width && meets(title.getBoundingClientRect(), legend)) {
        faults.push(`axis title over the legend in ${chart.dataset.figure || chart.id}: ${title.textContent}`);
      }
    }
  }
  return faults;
}"""


def fonts_of(page, selector: str) -> set[str]:
    """The fonts Chromium drew a node's text with (DevTools' CSS.getPlatformFontsForNode)."""
    cdp = page.context.new_cdp_session(page)
    root = cdp.send("DOM.getDocument")["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    cdp.send("CSS.enable")
    return {font["familyName"] for font in cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]}


def test_an_instructor_teaches_a_five_step_plan_to_a_phone_in_chinese_and_a_late_joiner(
        asgi_server, demo, zh_en, page_factory, shared_worker, empty_training_queue, tmp_path):
    from django.contrib.auth.models import User
    from django.utils import translation

    from webapp.classroom.models import LessonPlan, LiveSession
    from webapp.experiments.figures import verdict_sentence
    from webapp.experiments.models import ExperimentRun
    from webapp.lesson.content import exercise_question
    from webapp.lesson.parts import lesson_parts

    shared_worker("interactive,demonstrations,experiments")
    plan = LessonPlan.objects.create(owner=User.objects.get(username="instructor"), title="The encoder", steps=PLAN)
    teacher = page_factory("en-US")
    code = console_opened(teacher, asgi_server, "The encoder, live", zh_en)

    ann = page_factory("zh-CN")
    ann.set_viewport_size({"width": 360, "height": 780})
    sign_in(ann, asgi_server, "student")
    ann.goto(f"{asgi_server}/classroom/{code}/")
    teacher.wait_for_function("document.querySelector('[data-testid=presence-count]').textContent === '1'")
    assert ann.get_by_test_id("class-lesson").is_hidden()  # nothing shown yet

    # The console's own part picker offers a part's demonstration only where the part has one.
    teacher.select_option("[data-testid=lesson-part-picker]", "encoder#ffn")
    assert teacher.get_by_test_id("demo-sentence").is_hidden()
    teacher.select_option("[data-testid=plan-picker]", str(plan.pk))
    wait_text(teacher, "plan-next", "Step 1 of 6: show Try it on the real model")
    deadline = time.monotonic() + 10  # the `plan` frame is on its way: its results will gather on the plan's page
    while LiveSession.objects.get(code=code).plan != plan:
        assert time.monotonic() < deadline, "the session did not record its plan"
        time.sleep(0.1)

    teacher.get_by_test_id("plan-do").click()  # 1: the part
    ann.wait_for_selector("[data-testid=lesson-part] h2#layers")
    with translation.override("zh-hans"):
        title = next(p.title for p in lesson_parts()["encoder"] if p.id == "layers")
        computed = translation.gettext("Computed just now by a worker.")
        waiting = translation.gettext("The experiment is training on a worker. Predict its outcome: its curves come "
                                      "with the reveal.")
        exercise_zh = exercise_question("encoder-1")
    assert ann.locator("[data-testid=lesson-part] h2").all_inner_texts() == [title]  # this part only, in Chinese
    assert ann.locator("[data-testid=lesson-part] form").count() == 0  # the page's own Run is not the class's
    assert teacher.get_by_test_id("demo-sentence").is_visible()  # the console's picker followed the plan

    wait_text(teacher, "plan-next", f"Step 2 of 6: run the demonstration of “Try it on the real model” on {SENTENCE}")
    teacher.get_by_test_id("plan-do").click()  # 2: its demonstration, once for the class
    for page in (teacher, ann):
        draw_every_figure(page, "[data-testid=class-demo-result]", timeout=60_000)
    assert computed in ann.get_by_test_id("class-demo-result").inner_text()
    assert ann.evaluate("document.documentElement.scrollWidth") <= 360  # nothing wider than the phone
    # The query tokens: the console's pick runs it again for every screen; a student's are the console's to choose.
    queries = "[data-testid=class-demo-result] button[data-query]"
    assert ann.locator(queries).first.is_disabled() and ann.get_by_test_id("query-note").is_visible()
    teacher.locator(queries).nth(2).click()
    ann.wait_for_selector("[data-testid=class-demo][data-n='2']", timeout=60_000)
    ann.wait_for_selector(f"{queries}[data-query='2'][aria-pressed=true]", timeout=30_000)

    bob = page_factory("en-US")  # joins late: the part and the demonstration are there at once
    sign_in(bob, asgi_server, "student2")
    bob.goto(f"{asgi_server}/classroom/{code}/")
    bob.wait_for_selector("[data-testid=lesson-part] h2#layers")
    draw_every_figure(bob, "[data-testid=class-demo-result]")
    assert "Computed just now" in bob.get_by_test_id("class-demo-result").inner_text()

    wait_text(teacher, "plan-note", "Let them argue")
    teacher.get_by_test_id("plan-do").click()  # 3: an exercise: each screen in its reader's language
    for page in (ann, bob):
        page.wait_for_selector(OPTIONS)
    assert ann.locator(OPTIONS).all_inner_texts() == exercise_zh["options"]
    assert ann.get_by_test_id("question").locator("#cr-q-prompt").inner_text() == exercise_zh["prompt"]
    assert bob.locator(OPTIONS).all_inner_texts() == ["Sharper", "Flatter", "The same"]
    ann.locator(f"{OPTIONS}[data-option='Flatter']").click()
    bob.locator(OPTIONS, has_text="Sharper").click()
    teacher.wait_for_function("document.querySelector('[data-testid=histogram]')?.dataset.total === '2'")
    teacher.get_by_test_id("reveal").click()
    for page in (ann, bob):
        page.wait_for_selector("[data-testid=explanation]")
        assert "√d_k" in page.get_by_test_id("question-result").inner_text()
    assert "right" in ann.get_by_test_id("question-result").get_attribute("class")
    assert "wrong" in bob.get_by_test_id("question-result").get_attribute("class")
    # Whose answer: the lesson's (not "the model chose"), in each reader's words.
    assert "The lesson's answer is Flatter." in bob.get_by_test_id("question-result").inner_text()
    assert f"课程给出的答案是 {exercise_zh['options'][1]}" in ann.get_by_test_id("question-result").inner_text()
    assert exercise_zh["explanation"] in ann.get_by_test_id("question-result").inner_text()

    # A step that is refused does not move the plan on: the next-token question before its decode (skipped).
    teacher.get_by_test_id("plan-skip").click()
    wait_text(teacher, "plan-next", "Step 5 of 6")
    teacher.get_by_test_id("plan-do").click()
    wait_text(teacher, "plan-note", "Not done:")
    assert "Step 5 of 6" in teacher.get_by_test_id("plan-next").inner_text()
    teacher.get_by_test_id("plan-previous").click()
    wait_text(teacher, "plan-next", "Step 4 of 6")

    teacher.get_by_test_id("plan-do").click()  # 4: a step-by-step decode; two steps by the console's own Step
    chips = "document.querySelectorAll('[data-testid=output-tokens] .pg-tok').length"
    for n in (1, 2):
        teacher.get_by_test_id("step").click()
        for page in (ann, bob):
            page.wait_for_function(f"{chips} === {n}")
    teacher.get_by_test_id("plan-do").click()  # 5: what the next token will be
    for page in (ann, bob):
        page.wait_for_selector(OPTIONS)
    ann.locator(OPTIONS).nth(0).click()
    teacher.wait_for_function("document.querySelector('[data-testid=histogram]')?.dataset.total === '1'")
    teacher.get_by_test_id("reveal").click()
    for page in (ann, bob):
        page.wait_for_function(f"{chips} === 3")  # the held step comes with the reveal

    teacher.get_by_test_id("plan-do").click()  # 6: a comparison the class predicts before it has a curve
    ann.wait_for_selector(f"{OPTIONS}:not([disabled])")
    assert ann.get_by_test_id("class-demo").inner_text().strip() == waiting
    ann.locator(f"{OPTIONS}[data-option='no mask']").click()
    wait_text(teacher, "plan-next", "The plan is done (6 steps).")
    # Until its result is in, every screen shows the training's progress and the console's Reveal waits, saying why.
    assert teacher.get_by_test_id("reveal").is_disabled()
    assert "waits for the experiment's result" in teacher.get_by_test_id("reveal-why").inner_text()
    ann.get_by_test_id("experiment-progress-text").wait_for()
    # 4 seeds of each arm train on one thread: 120 s ran out once on a two-core host loaded by other tests
    teacher.wait_for_selector("[data-testid=reveal]:not([disabled])", timeout=300_000)
    with translation.override("zh-hans"):
        result_in = translation.gettext("The result is in (it trained for {s} s).").split("{s}")[0]
    wait_text(ann, "experiment-progress-text", result_in)
    assert teacher.get_by_test_id("reveal-why").is_hidden()
    teacher.get_by_test_id("reveal").click()
    for page in (ann, bob):
        draw_every_figure(page, "[data-testid=class-demo-result]")
    run = ExperimentRun.objects.get(kind="sweep", params__switch="mask")  # 4 seeds of each arm: their verdict
    with translation.override("zh-hans"):
        told_zh = verdict_sentence(run.result["verdict"])
    assert told_zh in ann.get_by_test_id("question-result").inner_text()
    assert verdict_sentence(run.result["verdict"]) in bob.get_by_test_id("question-result").inner_text()
    steps = run.result["steps"]  # every seed's curve, the means and the bands replayed to their last step
    for page in (ann, bob):
        assert set(page.evaluate("[...document.querySelector('[data-testid=class-demo-result] "
                                 ".plot[data-figure=loss]').data].map((trace) => trace.x.length)")) == {steps}
        assert page.get_by_test_id("class-lesson").locator("[data-replayed]").get_attribute("data-replayed") == str(steps)

    # A student who reloads after the reveal gets the room as it is: the measured result, their own answer's result.
    ann.reload()
    draw_every_figure(ann, "[data-testid=class-demo-result]")
    assert told_zh in ann.get_by_test_id("question-result").inner_text()
    assert ann.get_by_test_id("class-lesson").locator("#cr-demo-status").inner_text().strip() != ""
    settled(ann)
    ann.screenshot(path=str(tmp_path / "classroom-zh-phone.png"), full_page=False)
    fonts = fonts_of(ann, "[data-testid=question-result]")
    assert any("CJK" in font for font in fonts), fonts  # Chinese drawn in a CJK font, not as boxes
    # ... and nothing on the phone squeezed or drawn over: the result's table, its charts, in both languages.
    result = "[data-testid=class-demo-result]"
    assert ann.eval_on_selector(result, LAYOUT_FAULTS) == []
    bob.set_viewport_size({"width": 360, "height": 780})
    bob.reload()
    draw_every_figure(bob, result)
    assert bob.eval_on_selector(result, LAYOUT_FAULTS) == []
