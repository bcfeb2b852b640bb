"""Chromium: an admin queues a small job, watches it reach 100 % live, and finds the model in the registry."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.fixtures.demo import PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.services]

SMALL_JOB = {"layers": "2", "d_model": "32", "n_heads": "2", "d_ff": "64", "steps": "40", "batch_size": "32",
             "warmup_steps": "10", "checkpoint_every": "10", "eval_every": "20"}


def test_an_admin_queues_a_job_watches_it_finish_and_finds_its_model(
    asgi_server, demo, page_factory, start_worker, empty_training_queue, tmp_path
):
    start_worker("training", env={"MODEL_STORE": str(tmp_path / "store"), "OMP_NUM_THREADS": "1"})
    page = page_factory("en-US")
    page.goto(asgi_server + "/training/")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit].primary")
    page.wait_for_url(asgi_server + "/training/")
    assert page.get_by_test_id("no-jobs").is_visible()

    page.get_by_test_id("new-job").click()
    page.select_option("select[name=task]", "copy")
    for name, value in SMALL_JOB.items():
        page.fill(f"input[name={name}]", value)
    page.get_by_test_id("queue").click()
    page.wait_for_url(f"{asgi_server}/training/jobs/*/")
    job_id = page.url.rstrip("/").rsplit("/", 1)[1]

    # The bar moves while steps arrive over the socket: a value between 0 and 100 shows (checked every frame).
    page.wait_for_function(f"(() => {{ const bar = document.querySelector('[data-testid=progress-{job_id}]'); "
                           "const value = Number(bar?.getAttribute('aria-valuenow')); return value > 0 && value < 100; })()",
                           timeout=120_000)
    page.wait_for_selector(f"[data-testid=status-{job_id}][data-status=succeeded]", timeout=120_000)
    expect(page.get_by_test_id(f"progress-{job_id}")).to_have_attribute("aria-valuenow", "100")
    # A job that reaches its final state reloads the page, which then names the model: wait for
    # that page before reading anything off it (a read during the reload has no page to read).
    model_link = page.get_by_test_id("model").locator("a")
    model_link.wait_for(timeout=30_000)
    page.wait_for_load_state("load")
    assert page.get_by_test_id(f"percent-{job_id}").inner_text() == "100 %"
    page.wait_for_function("(document.getElementById('loss-plot')?.data?.[0]?.x?.length || 0) >= 10")
    assert "finished" in page.get_by_test_id("log").inner_text()

    name = f"job-{job_id}-copy"
    assert model_link.inner_text() == name
    model_link.click()
    page.wait_for_url(f"{asgi_server}/models/{name}/")
    assert page.get_by_test_id(f"publish-{name}").inner_text().startswith("hidden")
    page.goto(asgi_server + "/models/")
    assert page.locator(f"tr[data-model={name}]").is_visible()
    assert page.get_by_test_id("training-badge").is_hidden(), "no job of mine is active any more"
