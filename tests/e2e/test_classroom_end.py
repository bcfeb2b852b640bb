"""Chromium: a session's end, as the class lives it (issue 27). A Chinese-speaking student answers a "will it stop?"
question and reads the reveal in the buttons' words (会 / 不会); the instructor's End asks first (No leaves the class
running); once ended, the student's screen stays and says that the instructor ended the session, with the history's
link; the history keeps the step-by-step run's tokens one by one and shows the student their answer and score."""
from __future__ import annotations

import pytest

from tests.fixtures.demo import console_opened, sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SENTENCE = "我们看见我的猫。"
CHIPS = "document.querySelectorAll('[data-testid=output-tokens] .pg-tok').length"


def test_the_end_asks_first_the_student_is_told_and_the_history_keeps_the_run(
        asgi_server, demo, zh_en, page_factory, shared_worker):
    shared_worker("interactive")
    teacher = page_factory("en-US")
    code = console_opened(teacher, asgi_server, "Friday class", zh_en)

    mei = page_factory("zh-CN")
    sign_in(mei, asgi_server, "student")
    mei.goto(f"{asgi_server}/classroom/{code}/")
    mei.wait_for_function("document.getElementById('cr-page').getAttribute('aria-busy') === 'false'")

    teacher.get_by_test_id("source").fill(SENTENCE)
    teacher.get_by_test_id("step").click()
    mei.wait_for_function("document.querySelectorAll('[data-testid=source-tokens] .pg-tok').length > 0")
    for n in (1, 2, 3):
        teacher.get_by_test_id("step").click()
        mei.wait_for_function(f"{CHIPS} === {n}")

    teacher.get_by_test_id("ask-stop").click()
    mei.wait_for_selector("[data-testid=question-options] button")
    assert mei.locator("[data-testid=question-options] button").all_inner_texts() == ["会", "不会"]
    mei.locator("[data-testid=question-options] button[data-option=no]").click()
    mei.wait_for_function("document.querySelector('[data-testid=question-result]').textContent.includes('不会')")
    assert mei.get_by_test_id("question-result").inner_text() == "你的答案：不会"
    teacher.wait_for_function("document.querySelector('[data-testid=histogram]')?.dataset.total === '1'")
    teacher.get_by_test_id("reveal").click()
    mei.wait_for_function(f"{CHIPS} === 4")  # "cat" comes next: the model does not stop here
    mei.wait_for_function("document.querySelector('[data-testid=question-result]').textContent.includes('模型')")
    result = mei.get_by_test_id("question-result").inner_text()
    assert result == "答对了！模型选的是 不会。", result  # never "no" in a Chinese sentence
    teacher.wait_for_function("document.querySelector('[data-testid=question-result]').textContent.includes('chose')")
    assert teacher.get_by_test_id("question-result").inner_text() == "The model chose no."

    # End asks first; No leaves the class running.
    teacher.get_by_test_id("end").click()
    dialog = teacher.get_by_test_id("end-dialog")
    dialog.wait_for(state="visible")
    assert "End “Friday class”?" in dialog.inner_text()
    dialog.get_by_test_id("end-cancel").click()
    dialog.wait_for(state="hidden")
    assert teacher.url.endswith("/console/")
    teacher.get_by_test_id("step").click()  # still running: one more token reaches the student
    mei.wait_for_function(f"{CHIPS} === 5")
    assert mei.get_by_test_id("ended-note").is_hidden()
    live = mei.locator("[data-testid=output-tokens] .pg-tok").all_inner_texts()

    teacher.get_by_test_id("end").click()
    dialog.wait_for(state="visible")
    dialog.get_by_test_id("end-confirm").click()
    teacher.wait_for_url(f"**/classroom/{code}/history/")
    assert "You ended the session." in teacher.locator(".messages").inner_text()

    note = mei.get_by_test_id("ended-note")
    note.wait_for(state="visible")
    assert mei.url.endswith(f"/classroom/{code}/")  # the screen stays: no silent bounce
    assert "老师结束了这堂课。" in note.inner_text()
    mei.get_by_test_id("ended-history").click()
    mei.wait_for_url(f"**/classroom/{code}/history/")

    for page in (teacher, mei):  # the step-by-step run, each token its own item, as the screens showed it
        assert page.locator("[data-testid=run-tokens] li").all_inner_texts() == live
    assert teacher.get_by_test_id("run-text").inner_text().strip() != ""
    assert mei.get_by_test_id("revealed-answer").inner_text() == "不会"
    assert mei.get_by_test_id("my-answer").inner_text().split() == ["你的答案：", "不会", "答对"]
    assert mei.get_by_test_id("my-score").inner_text() == "你的得分：答对 1 题。"
