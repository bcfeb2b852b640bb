"""Chromium: every chart title of the lesson and experiment pages stays whole inside its chart, above its plot, clear
of Plotly's toolbar, and every axis title inside its chart, on a 1400 px screen and on a 360 px phone, in English and
in Chinese."""
from __future__ import annotations

import pytest

from tests.fixtures.browser import settled
from tests.fixtures.demo import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# Per drawn chart: its title's box, the chart's box and the toolbar's (when it has one).
BOXES = """() => [...document.querySelectorAll('.js-plotly-plot')].filter((div) => div.querySelector('.gtitle'))
  .map((div) => {
    const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const bar = div.querySelector('.modebar');
    return {id: div.dataset.testid, title: div.querySelector('.gtitle').textContent, text: box(div.querySelector('.gtitle')),
            chart: box(div), area: box(div.querySelector('.nsewdrag')), bar: bar && bar.getBoundingClientRect().width ? box(bar) : null};
  })"""


def problems(charts: list[dict], where: str) -> list[str]:
    found = []
    for c in charts:
        (tl, tt, tr, tb), (cl, ct, cr, _bottom) = c["text"], c["chart"]
        if tl < cl - 1 or tr > cr + 1 or tt < ct - 1:
            found.append(f"{where} {c['id']}: title cut off: {c['title']!r}")
        if tb > c["area"][1] + 1:
            found.append(f"{where} {c['id']}: the title runs into the plot: {c['title']!r}")
        if c["bar"]:
            bl, bt, br, bb = c["bar"]
            if tl < br and bl < tr and tt < bb and bt < tb:
                found.append(f"{where} {c['id']}: the toolbar covers the title {c['title']!r}")
    return found


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_chart_titles_stay_whole_and_clear_of_the_toolbar_on_a_screen_and_a_phone(asgi_server, demo, page_factory,
                                                                                   locale):
    found, seen = [], 0
    for width in (1400, 360):
        page = page_factory(locale)
        page.set_viewport_size({"width": width, "height": 900})
        sign_in(page, asgi_server, "student")
        for path in ("/experiments/norm-position/", "/experiments/residuals/", "/lesson/questions/"):
            page.goto(asgi_server + path)
            page.wait_for_selector(".js-plotly-plot .gtitle")
            settled(page)
            for div in page.query_selector_all(".js-plotly-plot"):
                div.hover()  # the toolbar shows on hover
                charts = page.evaluate(BOXES)
                found += problems([c for c in charts if c["bar"]], f"{width} px {path}")
            charts = page.evaluate(BOXES)
            seen += len(charts)
            found += problems(charts, f"{width} px {path}")
    assert seen > 10
    assert not found, "\n".join(sorted(set(found)))


# Per drawn chart: each axis title's box (every subplot's, the right-hand y-axis's too) and the chart's.
AXIS_BOXES = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap((div) => {
    const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    return [...div.querySelectorAll('[class^="g-x"][class$="title"] text, [class^="g-y"][class$="title"] text')]
      .map((t) => ({id: div.dataset.testid, title: t.textContent, text: box(t), chart: box(div)}));
  })"""


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_axis_titles_stay_inside_their_charts_on_a_screen_and_a_phone(asgi_server, demo, page_factory, locale):
    found, seen = [], 0
    for width in (1400, 360):
        page = page_factory(locale)
        page.set_viewport_size({"width": width, "height": 900})
        sign_in(page, asgi_server, "student")
        for path in ("/experiments/norm-position/", "/experiments/residuals/", "/experiments/layernorm/",
                     "/lesson/questions/"):
            page.goto(asgi_server + path)
            page.wait_for_selector(".js-plotly-plot .gtitle")
            settled(page)
            titles = page.evaluate(AXIS_BOXES)
            seen += len(titles)
            for t in titles:
                (tl, tt, tr, tb), (cl, ct, cr, cb) = t["text"], t["chart"]
                if tl < cl - 1 or tr > cr + 1 or tt < ct - 1 or tb > cb + 1:
                    found.append(f"{width} px {path} {t['id']}: axis title out of the chart: {t['title']!r}")
    assert seen > 20
    assert not found, "\n".join(sorted(set(found)))
