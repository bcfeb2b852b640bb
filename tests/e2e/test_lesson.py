"""Chromium: a student walks the lesson, every demonstration draws, an answer is revealed; the instructor sees it."""
from __future__ import annotations

import pytest

from tests.fixtures.demo import sign_in
from tests.webapp.lesson.seats import seat

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def run_demo(page, kind: str, sentence: str | None = None) -> None:
    form = page.get_by_test_id(f"demo-form-{kind}")
    if sentence is not None:
        form.get_by_test_id("sentence").fill(sentence)
    form.get_by_test_id(f"demo-run-{kind}").click()


def plots_in(page, kind: str) -> int:
    return page.evaluate(f"document.querySelectorAll('[data-testid=demo-result-{kind}] .js-plotly-plot').length")


@pytest.mark.usefixtures("empty_training_queue")
def test_a_student_walks_the_lesson_and_the_instructor_sees_the_progress(asgi_server, demo, zh_en, page_factory,
                                                                         shared_worker):
    shared_worker("interactive,demonstrations,experiments")
    page = page_factory("en-US")
    sign_in(page, asgi_server, "student")
    page.get_by_test_id("home-lesson").click()
    page.get_by_test_id("overview-diagram").wait_for()
    assert page.locator("[data-testid=encoder-layer]").count() == 3

    page.goto(asgi_server + "/lesson/encoder/")
    run_demo(page, "encoder")
    page.wait_for_function("document.querySelectorAll('[data-testid=demo-result-encoder] .js-plotly-plot').length == 7",
                           timeout=60_000)
    first = page.evaluate("JSON.stringify(document.querySelector('[data-figure=row_weights]').data[0].y)")
    page.locator("[data-testid=demo-result-encoder] button[data-query='2']").click()  # 猫 as the query
    page.wait_for_function(f"(() => {{ const y = document.querySelector('[data-figure=row_weights]')?.data?.[0]?.y; "
                           f"return y !== undefined && JSON.stringify(y) !== {first!r}; }})()",  # the new chart, drawn
                           timeout=60_000)
    assert "猫" in page.locator("[data-testid=demo-result-encoder] button[aria-pressed=true]").inner_text()
    run_demo(page, "encoder", "ĀĀ")
    page.get_by_test_id("demo-error").wait_for()  # characters the model never saw: a message, the form still there
    page.get_by_test_id("exercise-encoder-1").get_by_role("button").click()
    page.get_by_test_id("exercise-encoder-1").get_by_test_id("answer").wait_for()

    page.goto(asgi_server + "/lesson/decoder/")
    run_demo(page, "decoder")
    page.wait_for_function("document.querySelectorAll('[data-testid=demo-result-decoder] .js-plotly-plot').length == 4",
                           timeout=60_000)
    assert "my cat chased a mouse" in page.get_by_test_id("decoder-output").inner_text()
    page.get_by_test_id("train-mask").click()
    page.wait_for_selector("[data-testid=live-loss]:not([hidden])", timeout=120_000)  # the loss, live over the socket
    page.wait_for_function(  # its text alternative names the arm being trained (it was drawn with no series)
        "document.querySelector('[data-testid=live-loss]')?.getAttribute('aria-label')?.includes('causal mask')",
        timeout=60_000)
    page.wait_for_selector("[data-testid=run][data-status=succeeded] .js-plotly-plot", timeout=180_000)

    page.goto(asgi_server + "/lesson/residual-norm/")
    run_demo(page, "residual")
    page.wait_for_function("document.querySelectorAll('[data-testid=demo-result-residual] .js-plotly-plot').length == 3",
                           timeout=60_000)
    page.goto(asgi_server + "/lesson/questions/")
    run_demo(page, "norms")
    page.wait_for_function("document.querySelectorAll('[data-testid=demo-result-norms] .js-plotly-plot').length == 3",
                           timeout=60_000)
    page.goto(asgi_server + "/lesson/glossary/")
    assert "交叉注意力" in page.get_by_test_id("glossary").inner_text()

    from django.contrib.auth.models import User

    seat(User.objects.get(username="student"), User.objects.get(username="instructor"))
    teacher = page_factory("en-US")
    sign_in(teacher, asgi_server, "instructor")
    teacher.goto(asgi_server + "/lesson/progress/")
    row = teacher.get_by_test_id("progress-student").inner_text()
    assert row.count("✓") == 6 and "1/3" in row
