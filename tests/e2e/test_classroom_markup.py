"""Chromium: a student's typed answer is drawn as text in the histograms, never as Plotly label markup (a link, a style)."""
from __future__ import annotations

import pytest

from tests.fixtures.demo import console_opened, sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

LINK = '<a href="https://evil.example/">TAP HERE</a>'
BIG = '<span style="font-size:90px;fill:red">BIG</span>'
CHIPS = "document.querySelectorAll('[data-testid=output-tokens] .pg-tok').length"


def chart(page) -> dict:
    """What the histogram's SVG holds: its links, its styled text spans, and every tick label's text."""
    return page.evaluate("""() => {
      const svg = document.querySelector('[data-testid=histogram] svg.main-svg');
      return {
        links: svg.querySelectorAll('a').length,
        styled: [...svg.querySelectorAll('tspan[style]')].filter((t) => t.getAttribute('style').includes('90px')).length,
        ticks: [...document.querySelectorAll('[data-testid=histogram] .xtick text')].map((t) => t.textContent),
      };
    }""")


def test_a_typed_answer_with_markup_is_drawn_as_its_text(asgi_server, demo, zh_en, page_factory, shared_worker):
    shared_worker("interactive")
    teacher = page_factory("en-US")
    code = console_opened(teacher, asgi_server, "Markup", zh_en)
    students = []
    for name in ("student", "student2"):
        page = page_factory("en-US")
        sign_in(page, asgi_server, name)
        page.goto(f"{asgi_server}/classroom/{code}/")
        page.wait_for_function("document.querySelector('[data-testid=status]').textContent.startsWith('Waiting')")
        students.append(page)
    mallory, ann = students

    teacher.get_by_test_id("source").fill("我们看见我的猫。")
    teacher.get_by_test_id("step").click()
    mallory.wait_for_function("document.querySelectorAll('[data-testid=source-tokens] .pg-tok').length > 0")
    teacher.get_by_test_id("step").click()
    for page in (teacher, mallory, ann):
        page.wait_for_function(f"{CHIPS} === 1")
    teacher.get_by_test_id("ask-next_token").click()
    for page in (mallory, ann):
        page.wait_for_selector("[data-testid=typed-answer]:visible")
    mallory.get_by_test_id("typed-answer").fill(LINK)
    mallory.get_by_test_id("typed-answer").press("Enter")
    ann.get_by_test_id("typed-answer").fill(BIG)
    ann.get_by_test_id("typed-answer").press("Enter")
    teacher.wait_for_function("document.querySelector('[data-testid=histogram]')?.dataset.total === '2'")
    drawn = chart(teacher)
    assert drawn["links"] == 0 and drawn["styled"] == 0
    assert LINK in drawn["ticks"] and BIG in drawn["ticks"]

    teacher.get_by_test_id("reveal").click()
    ann.wait_for_function("document.querySelector('[data-testid=question-result]')?.textContent.includes('chose')")
    ann.wait_for_function("document.querySelectorAll('[data-testid=histogram] .xtick text').length > 0")
    drawn = chart(ann)  # another student's screen, after the reveal
    assert drawn["links"] == 0 and drawn["styled"] == 0
    assert LINK in drawn["ticks"] and BIG in drawn["ticks"]
