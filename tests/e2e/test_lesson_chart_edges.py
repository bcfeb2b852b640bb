"""Chromium: the charts each lesson demonstration draws keep their words whole, in English and in Chinese, on a
1400 px screen and on a 360 px phone: the chart's title and every axis title inside the chart, and the subplots'
titles (every head of a layer side by side) inside it and clear of one another."""
from __future__ import annotations

import pytest

from tests.e2e.test_lesson_chinese import PAGES
from tests.fixtures.browser import settled
from tests.fixtures.demo import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# Per drawn chart: its box, its title's, each axis title's and each subplot title's (an annotation).
BOXES = """(kind) => [...document.querySelectorAll(`[data-testid=demo-result-${kind}] .js-plotly-plot`)].map((div) => {
    const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const texts = (selector) => [...div.querySelectorAll(selector)].map((t) => ({text: t.textContent, box: box(t)}));
    return {id: div.dataset.figure, chart: box(div), words: [...texts('.gtitle'),
            ...texts('[class^="g-x"][class$="title"] text, [class^="g-y"][class$="title"] text')],
            annotations: texts('.annotation-text')};
  })"""


def inside(box: list[float], chart: list[float]) -> bool:
    return box[0] >= chart[0] - 1 and box[1] >= chart[1] - 1 and box[2] <= chart[2] + 1 and box[3] <= chart[3] + 1


def apart(a: list[float], b: list[float]) -> bool:
    return a[2] <= b[0] + 1 or b[2] <= a[0] + 1 or a[3] <= b[1] + 1 or b[3] <= a[1] + 1


def problems(charts: list[dict], where: str) -> list[str]:
    found = []
    for c in charts:
        found += [f"{where} {c['id']}: cut off: {w['text']!r}" for w in c["words"] + c["annotations"]
                  if not inside(w["box"], c["chart"])]
        notes = c["annotations"]
        found += [f"{where} {c['id']}: {a['text']!r} overlaps {b['text']!r}" for i, a in enumerate(notes)
                  for b in notes[i + 1:] if not apart(a["box"], b["box"])]
    return found


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_every_demonstrations_chart_keeps_its_titles_whole_on_a_screen_and_a_phone(asgi_server, demo, zh_en,
                                                                                   page_factory, shared_worker, locale):
    shared_worker("demonstrations")
    found, seen, subplot_titles = [], 0, 0
    for width in (1400, 360):
        page = page_factory(locale)
        page.set_viewport_size({"width": width, "height": 900})
        sign_in(page, asgi_server, "student")
        for path, kinds in PAGES:
            if not kinds:
                continue
            page.goto(asgi_server + path)
            for kind in kinds:
                page.get_by_test_id(f"demo-run-{kind}").click()
                page.wait_for_selector(f"[data-testid=demo-result-{kind}] .js-plotly-plot .gtitle", timeout=60_000)
            settled(page)
            for kind in kinds:
                charts = page.evaluate(BOXES, kind)
                seen += len(charts)
                subplot_titles += sum(len(c["annotations"]) for c in charts)
                found += problems(charts, f"{width} px {kind}")
    assert seen > 20 and subplot_titles >= 8  # the encoder's four heads, on each screen
    assert not found, "\n".join(sorted(set(found)))
