"""Chromium: the playground's KV-cache charts after a decode: each legend above its plot (not on its bars or
points), and every point inside the plot's area."""
from __future__ import annotations

import pytest

from tests.fixtures.demo import STATUS
from tests.fixtures.playground_page import SENTENCE, open_playground

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

GEOMETRY = """(id) => {
    const div = document.getElementById(id);
    const box = (el) => { const r = el.getBoundingClientRect(); return {top: r.top, bottom: r.bottom}; };
    return {
        legend: box(div.querySelector('g.legend')),
        area: box(div.querySelector('.nsewdrag')),
        points: [...div.querySelectorAll('.scatterlayer .point')].map(box),
        bars: div.querySelectorAll('.barlayer .point').length,
    };
}"""


@pytest.mark.parametrize("width", [1400, 360])
def test_the_kv_cache_charts_keep_their_legends_off_the_plot(asgi_server, demo, zh_en, page_factory, shared_worker,
                                                              width):
    shared_worker("interactive")
    page = page_factory("en-US")
    page.set_viewport_size({"width": width, "height": 900})
    open_playground(page, asgi_server, zh_en)
    page.get_by_test_id("source").fill(SENTENCE)
    page.get_by_test_id("run").click()
    page.wait_for_function(f"{STATUS}.startsWith('Done')", timeout=60_000)
    page.wait_for_function("document.querySelectorAll('#view-kv-time .scatterlayer .point').length > 5")
    layers, timing = page.evaluate(GEOMETRY, "view-kv-layers"), page.evaluate(GEOMETRY, "view-kv-time")
    assert layers["bars"] == 6  # three layers, self- and cross-attention positions stacked
    for chart in (layers, timing):
        assert chart["legend"]["bottom"] <= chart["area"]["top"] + 1, chart["legend"]
    radius = 4  # a marker's half size: its centre is on the plot's edge at most
    assert all(p["top"] >= timing["area"]["top"] - radius and p["bottom"] <= timing["area"]["bottom"] + radius
               for p in timing["points"])


def test_the_beam_search_caption_is_whole_on_a_phone(asgi_server, demo, zh_en, page_factory, shared_worker):
    shared_worker("interactive")
    page = page_factory("en-US")
    page.set_viewport_size({"width": 360, "height": 800})
    open_playground(page, asgi_server, zh_en)
    page.get_by_test_id("source").fill(SENTENCE)
    page.locator("input[name=strategy][value=beam]").check()
    page.get_by_test_id("run").click()
    page.wait_for_function(f"{STATUS}.startsWith('Done')", timeout=60_000)
    caption = page.evaluate("""() => {
        const div = document.getElementById('view-topk'), box = div.getBoundingClientRect();
        const title = div.querySelector('.gtitle'), r = title.getBoundingClientRect();
        return {text: [...title.querySelectorAll('tspan.line')].map(t => t.textContent).join(' ') || title.textContent,
                left: r.left - box.left, right: box.right - r.right};
    }""")
    assert caption["text"] == "the best hypothesis: each token's probability given the tokens before it"
    assert caption["left"] >= 0 and caption["right"] >= 0, caption  # every word inside the chart
