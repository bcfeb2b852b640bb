"""Chromium opens the experiment pages and sees the Plotly charts drawn; a launched run arrives live."""
from __future__ import annotations

import pytest

from tests.fixtures.demo import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def launch(page, asgi_server: str, fields: dict[str, str]) -> None:
    """A student's run of the norm-position comparison, launched from the experiments page."""
    sign_in(page, asgi_server, "student")
    page.goto(asgi_server + "/experiments/")
    form = page.get_by_test_id("launch-form")
    for name, value in fields.items():
        form.locator(f"input[name={name}]").fill(value)
    form.locator("button[type=submit]").click()


def traces(page, figure: str) -> int:
    return page.evaluate(f"document.querySelector('[data-figure={figure}]').data.length")


def test_the_norm_position_page_draws_every_chart(asgi_server, demo, page_factory):
    page = page_factory("en-US")
    sign_in(page, asgi_server, "student")
    page.goto(asgi_server + "/experiments/norm-position/")
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 7")
    assert traces(page, "init_decoder") == 2 and traces(page, "loss") == 2
    assert page.evaluate("document.querySelector('[data-figure=heatmap_post]').data[0].type") == "heatmap"
    assert page.evaluate("document.querySelector('[data-figure=init_decoder]').layout.yaxis.type") == "log"


def test_the_layernorm_page_in_chinese(asgi_server, demo, page_factory):
    page = page_factory("zh-CN")
    sign_in(page, asgi_server, "student")
    page.goto(asgi_server + "/experiments/layernorm/")
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 5")
    # "LayerNorm keeps no running statistics", in the lesson's one term for them (滑动统计量, as BatchNorm's 滑动平均)
    assert "层归一化不保存任何滑动统计量" in page.inner_text("main")


@pytest.mark.usefixtures("empty_training_queue")
def test_a_launched_run_shows_its_progress_then_its_figures(asgi_server, demo, page_factory, shared_worker):
    shared_worker("experiments")
    page = page_factory("en-US")
    launch(page, asgi_server, {"layers": "1", "d_model": "8", "steps": "10", "batch_size": "8", "seed": "4242"})
    page.get_by_test_id("run-panel").wait_for()
    page.wait_for_selector("[data-testid=run-result] .js-plotly-plot", timeout=120_000)
    assert page.get_by_test_id("run-panel").get_attribute("data-status") == "succeeded"
    assert page.get_by_test_id("run-status").inner_text() == "Done"
    assert traces(page, "loss") == 2


@pytest.mark.usefixtures("empty_training_queue")
def test_the_live_loss_chart_names_its_series_to_a_screen_reader(asgi_server, demo, page_factory, shared_worker):
    shared_worker("experiments")
    page = page_factory("en-US")
    launch(page, asgi_server, {"layers": "2", "d_model": "32", "steps": "300", "batch_size": "16", "seed": "4343"})
    page.wait_for_selector("[data-testid=live-loss]:not([hidden])", timeout=120_000)
    # Drawn empty at the first loss point, then each arm added: the text alternative names the arms that arrived.
    page.wait_for_function("""() => { const label = document.querySelector('[data-testid=live-loss]')?.getAttribute('aria-label');
                                      return !!label && label.includes('Post-LN') && label.includes('Pre-LN'); }""", timeout=120_000)
    label = page.get_attribute("[data-testid=live-loss]", "aria-label")
    assert label.startswith("training loss. step · training loss. ") and page.get_attribute("[data-testid=live-loss]", "role") == "img"
