"""Chromium: the instructor teaches a part of the lesson live. A student on a 360 px phone, reading in Chinese, sees
the part from the Chinese page, the demonstration the console ran for the class drawn on the real model's figures,
an exercise asked, answered and revealed with why, and a training comparison predicted, then its measured curves."""
from __future__ import annotations

import pytest

from tests.fixtures.browser import settled
from tests.fixtures.demo import console_opened, sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_a_lesson_part_its_demonstration_and_its_exercise_reach_a_students_phone(
        asgi_server, demo, zh_en, page_factory, start_worker, empty_training_queue):
    import time

    from django.utils import translation

    from webapp.lesson.models import TrainingRun
    from webapp.lesson.parts import lesson_parts

    start_worker("demonstrations,experiments")
    teacher = page_factory("en-US")
    code = console_opened(teacher, asgi_server, "The encoder, live", zh_en)

    ann = page_factory("zh-CN")
    ann.set_viewport_size({"width": 360, "height": 780})
    sign_in(ann, asgi_server, "student")
    ann.goto(f"{asgi_server}/classroom/{code}/")
    teacher.wait_for_function("document.querySelector('[data-testid=presence-count]').textContent === '1'")
    assert ann.get_by_test_id("class-lesson").is_hidden()  # nothing shown yet

    # A part without a demonstration offers none to run; the one with the encoder's does.
    teacher.select_option("[data-testid=lesson-part-picker]", "encoder#ffn")
    assert teacher.get_by_test_id("demo-sentence").is_hidden()
    teacher.select_option("[data-testid=lesson-part-picker]", "encoder#layers")
    assert teacher.get_by_test_id("demo-sentence").is_visible()
    teacher.get_by_test_id("lesson-show").click()
    ann.wait_for_selector("[data-testid=lesson-part] h2#layers")
    with translation.override("zh-hans"):
        title = next(p.title for p in lesson_parts()["encoder"] if p.id == "layers")
    assert ann.locator("[data-testid=lesson-part] h2").all_inner_texts() == [title]  # this part only, in Chinese
    assert ann.locator("[data-testid=lesson-part] form").count() == 0  # the page's own Run is not the class's

    teacher.get_by_test_id("demo-sentence").fill("我的猫追了一只老鼠。")
    teacher.get_by_test_id("demo-run").click()
    for page in (teacher, ann):
        page.wait_for_selector("[data-testid=class-demo-result] .js-plotly-plot", timeout=60_000)
        settled(page)
    with translation.override("zh-hans"):
        computed = translation.gettext("Computed just now by a worker.")
    assert computed in ann.get_by_test_id("class-demo-result").inner_text()
    assert ann.locator("[data-testid=class-demo-result] .js-plotly-plot").count() >= 1
    assert ann.evaluate("document.documentElement.scrollWidth") <= 360  # nothing wider than the phone

    teacher.select_option("[data-testid=exercise-picker]", "encoder-1")
    teacher.get_by_test_id("ask-exercise").click()
    ann.wait_for_selector("[data-testid=question-options] button")
    assert ann.locator("[data-testid=question-options] button").all_inner_texts() == ["Sharper", "Flatter", "The same"]
    ann.locator("[data-testid=question-options] button", has_text="Flatter").click()
    teacher.wait_for_function("document.querySelector('[data-testid=histogram]')?.dataset.total === '1'")
    teacher.get_by_test_id("reveal").click()
    ann.wait_for_selector("[data-testid=explanation]")
    result = ann.get_by_test_id("question-result").inner_text()
    assert "Flatter" in result and "√d_k" in result
    assert "right" in (ann.get_by_test_id("question-result").get_attribute("class") or "")

    teacher.select_option("[data-testid=experiment-picker]", "mask")
    teacher.get_by_test_id("ask-experiment").click()
    ann.wait_for_selector("[data-testid=question-options] button:not([disabled])")
    with translation.override("zh-hans"):
        waiting = translation.gettext("The experiment is training on a worker. Predict its outcome: its curves come with "
                                      "the reveal.")
    assert ann.get_by_test_id("class-demo").inner_text().strip() == waiting  # no curve before the reveal
    ann.locator("[data-testid=question-options] button", has_text="no mask").click()
    deadline = time.monotonic() + 120
    while TrainingRun.objects.filter(kind="mask", status=TrainingRun.Status.SUCCEEDED).count() == 0:
        assert time.monotonic() < deadline, "the comparison did not finish"
        time.sleep(0.5)
    teacher.get_by_test_id("reveal").click()
    ann.wait_for_selector("[data-testid=class-demo-result] .js-plotly-plot", timeout=30_000)
    settled(ann)
    run = TrainingRun.objects.get(kind="mask")
    lowest = min(run.result["arms"], key=lambda arm: arm["final_loss"])["label"]
    assert lowest in ann.get_by_test_id("question-result").inner_text()
