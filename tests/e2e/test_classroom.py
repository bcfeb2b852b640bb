"""Chromium, three browser contexts: the instructor steps the model, two students' screens follow token by token,
answer a question, and see the reveal."""
from __future__ import annotations

import pytest

from tests.fixtures.demo import PASSWORD, console_opened, sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SENTENCE = "我们看见我的猫。"
CHIPS = "document.querySelectorAll('[data-testid=output-tokens] .pg-tok').length"


def sign_in_from(page, base: str, path: str, username: str) -> None:
    """An anonymous visitor opens `path`, signs in on the page it is sent to, and comes back to `path`."""
    page.goto(base + path)
    assert "/accounts/login/" in page.url and "next=" in page.url
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit].primary")
    page.wait_for_url(base + path)


def test_two_students_follow_the_instructor_step_by_step_and_answer_a_question(
        asgi_server, demo, zh_en, page_factory, shared_worker):
    shared_worker("interactive")
    teacher = page_factory("en-US")
    code = console_opened(teacher, asgi_server, "Monday class", zh_en)
    assert teacher.locator("[data-testid=qr] svg").count() == 1

    ann = page_factory("en-US")  # joins with the code typed in lower case
    sign_in(ann, asgi_server, "student")
    ann.goto(asgi_server + "/classroom/")
    ann.fill("input[name=code]", code.lower())
    ann.get_by_test_id("join").click()
    ann.wait_for_url(f"**/classroom/{code}/")
    bob = page_factory("en-US")  # follows the QR code's link before signing in, and is sent back to it
    sign_in_from(bob, asgi_server, f"/classroom/{code}/", "student2")
    for page in (ann, bob):
        page.wait_for_function("document.querySelector('[data-testid=status]').textContent.startsWith('Waiting')")
    teacher.wait_for_function("document.querySelector('[data-testid=presence-count]').textContent === '2'")
    assert sorted(teacher.locator("[data-testid=presence-list] li").all_inner_texts()) == ["student", "student2"]

    teacher.get_by_test_id("source").fill(SENTENCE)
    teacher.get_by_test_id("step").click()  # starts a step-by-step decode: the source, no token yet
    for page in (ann, bob):
        page.wait_for_function("document.querySelectorAll('[data-testid=source-tokens] .pg-tok').length === 9")  # and <eos>
    for n in (1, 2, 3):
        teacher.get_by_test_id("step").click()
        for page in (teacher, ann, bob):
            page.wait_for_function(f"{CHIPS} === {n}")
    shown = [page.get_by_test_id("output-tokens").inner_text() for page in (teacher, ann, bob)]
    assert shown[0] == shown[1] == shown[2]

    teacher.get_by_test_id("ask-next_token").click()
    for page in (ann, bob):
        page.wait_for_selector("[data-testid=question-options] button")
    assert ann.evaluate(CHIPS) == 3  # the step the question is about is held back
    options = ann.locator("[data-testid=question-options] button").all_inner_texts()
    assert len(options) >= 2 and not any("0." in option for option in options)  # no probabilities shown
    ann.locator("[data-testid=question-options] button").nth(0).click()
    bob.locator("[data-testid=question-options] button").nth(1).click()
    teacher.wait_for_function("document.querySelector('[data-testid=histogram]')?.dataset.total === '2'")
    assert teacher.get_by_test_id("answer-count").inner_text() == "2 answered"

    teacher.get_by_test_id("reveal").click()
    for page in (ann, bob):
        page.wait_for_function(f"{CHIPS} === 4")
        page.wait_for_function("document.querySelector('[data-testid=question-result]')?.textContent.includes('chose')")
    fourth = ann.locator("[data-testid=output-tokens] .pg-tok").nth(3).inner_text().split(": ", 1)[1]
    results = [page.get_by_test_id("question-result").inner_text() for page in (ann, bob)]
    assert all(fourth in result for result in results)
    assert sum(result.startswith("Right") for result in results) <= 1  # they picked different tokens
    assert ann.get_by_test_id("score").inner_text().startswith("Your score:")

    # Fork: the playground opens with the session's model, source and strategy, for the student alone
    ann.goto(ann.get_by_test_id("fork").get_attribute("href"))
    assert ann.get_by_test_id("source").input_value() == SENTENCE
    assert ann.get_by_test_id("model-picker").input_value() == zh_en
    assert ann.locator("input[name=strategy][value=greedy]").is_checked()
