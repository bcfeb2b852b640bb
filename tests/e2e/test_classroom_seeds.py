"""Chromium: after the reveal of a comparison over seeds, a student presses Add my seed; the console counts it
training; when it ends (its run's result written by hand: no worker) the student's plot holds its curves and the
verdict counts it; the console closes the window and the student's button goes grey, saying why."""
from __future__ import annotations

import pytest

from tests.fixtures.demo import console_opened, sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def wait_text(page, testid: str, text: str) -> None:
    page.wait_for_function(f"document.querySelector('[data-testid={testid}]')?.textContent.includes({text!r})")


@pytest.mark.no_worker  # the added seed's result is written by hand, not by an experiments worker
def test_a_student_adds_a_seed_and_the_plot_and_the_verdict_take_it(asgi_server, demo, zh_en, page_factory):
    from tests.fixtures.experiments import seed_result
    from webapp.classroom.models import AddedSeed

    teacher = page_factory("en-US")
    code = console_opened(teacher, asgi_server, "Seeds", zh_en)
    ann = page_factory("en-US")
    sign_in(ann, asgi_server, "student")
    ann.goto(f"{asgi_server}/classroom/{code}/")
    teacher.wait_for_function("document.querySelector('[data-testid=presence-count]').textContent === '1'")
    teacher.select_option("[data-testid=experiment-picker]", "mask")
    teacher.get_by_test_id("ask-experiment").click()  # the 16 seeds that ship: no worker needed
    wait_text(teacher, "experiment-progress-text", "The result is in")
    teacher.get_by_test_id("reveal").click()
    ann.get_by_test_id("add-seed").wait_for()
    wait_text(ann, "seeds-text", "0 in, 0 training; 30 more allowed")
    ann.get_by_test_id("add-seed").click()
    wait_text(ann, "seeds-text", "is training on a worker")
    assert ann.get_by_test_id("add-seed").is_disabled()  # one seed at a time
    wait_text(teacher, "seeds-text", "0 in, 1 training; 29 more allowed")
    added = AddedSeed.objects.get()
    seed_result(added.run_id, {"causal mask": 0.5, "no mask": 0.01})  # the worker's part, by hand
    wait_text(ann, "seeds-verdict", "With 1 seed the class added (17 in all)")
    wait_text(ann, "seeds-text", f"Your seed {added.seed} is in the plot.")
    ann.wait_for_function(  # the plot's figures now hold the seed's curve, among the class's 16
        "document.querySelector('[data-testid=class-demo-result] .figure-set > script')"
        f"?.textContent.includes('seed {added.seed}')")
    assert ann.get_by_test_id("add-seed").is_enabled()
    teacher.get_by_test_id("seeds-toggle").click()  # Close adding seeds
    wait_text(ann, "seeds-text", "The instructor has closed adding seeds.")
    assert ann.get_by_test_id("add-seed").is_disabled()
    wait_text(teacher, "seeds-toggle", "Reopen adding seeds")
