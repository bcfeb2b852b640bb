"""Chromium: the figures read the same everywhere: one style, readable log and layer axes, a text alternative each."""
from __future__ import annotations

import re

import pytest

from tests.fixtures.browser import settled
from tests.fixtures.demo import STATUS, playground_ready, sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TICKS = "([id, axis]) => [...document.querySelectorAll(`[data-testid=${id}] .${axis}tick text`)].map((t) => t.textContent)"


def test_experiment_figures_share_one_style_and_say_what_they_show(asgi_server, demo, page_factory):
    page = page_factory("en-US")
    sign_in(page, asgi_server, "student")
    page.goto(asgi_server + "/experiments/norm-position/")
    page.wait_for_selector("[data-testid=plot-init_decoder] .ytick text")

    log_ticks = page.evaluate(TICKS, ["plot-init_decoder", "y"])
    assert log_ticks and not any(re.search(r"[μnpfm]$", tick) for tick in log_ticks), log_ticks  # no SI prefixes
    values = [float(t.replace("×10", "e").translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789"))) for t in log_ticks]
    assert values == sorted(values)  # no "7 6 5 4 3 2 0.1 9 8"
    layer_ticks = page.evaluate(TICKS, ["plot-init_decoder", "x"])
    assert layer_ticks and all(tick.isdigit() for tick in layer_ticks), layer_ticks  # no layer 1.5

    colours = page.evaluate("""() => ['plot-init_decoder', 'plot-loss'].map((id) => {
        const div = document.querySelector(`[data-testid=${id}]`);
        return Object.fromEntries(div.data.map((trace) => [trace.name, trace.line.color]));
    })""")
    style = page.evaluate("JSON.parse(document.getElementById('figure-style').textContent).colors")
    for figure in colours:  # Post-LN and Pre-LN keep their colours from chart to chart
        assert figure["Post-LN"] == style["post"] and figure["Pre-LN"] == style["pre"], figure

    # The heatmap's layer names ("decoder 6") stay whole inside the chart, and its axis title sits below them.
    boxes = page.evaluate("""() => {
        const div = document.querySelector('[data-testid=plot-heatmap_post]');
        const box = (e) => e.getBoundingClientRect();
        const ticks = [...div.querySelectorAll('.xtick text')].map(box);
        return {ticks: ticks.map((r) => [r.left, r.right, r.bottom]), title: box(div.querySelector('.g-xtitle text')).top,
                left: box(div).left, right: box(div).right};
    }""")
    assert boxes["ticks"] and all(boxes["left"] <= left and right <= boxes["right"] for left, right, _ in boxes["ticks"]), boxes
    assert boxes["title"] >= max(bottom for _, _, bottom in boxes["ticks"]) - 1, boxes

    plots = page.eval_on_selector_all(".plot[data-figure]:not([hidden])",
                                      "els => els.map(e => [e.dataset.figure, e.getAttribute('role'), e.getAttribute('aria-label')])")
    assert plots and all(role == "img" and label and len(label) > 20 for _, role, label in plots), plots


def test_the_playground_charts_title_their_axes(asgi_server, demo, zh_en, page_factory, shared_worker):

    shared_worker("interactive")
    page = page_factory("en-US")
    playground_ready(page, asgi_server)
    page.get_by_test_id("run").click()
    page.wait_for_function(f"{STATUS}.startsWith('Done')", timeout=60_000)
    settled(page)
    titles = page.evaluate("""() => Object.fromEntries(['view-cross', 'view-self', 'view-encoder', 'view-topk', 'view-kv-time']
        .map((id) => { const l = document.getElementById(id).layout;
                       // An axis title longer than its side of the plot is drawn in lines (figure_style.js).
                       return [id, [l.xaxis.title?.text, l.yaxis.title?.text].map((t) => t?.replace(/<br>/g, " "))]; }))""")
    assert titles["view-cross"] == ["source token", "output token"]
    assert titles["view-self"] == ["earlier output position", "output token"]
    assert all(x and y for x, y in titles.values() if x is not None or y is not None), titles
    assert titles["view-topk"][1] == "probability" and titles["view-kv-time"] == ["step", "ms per step"]
    for view in ("view-cross", "view-topk", "view-kv-time"):
        assert page.get_attribute(f"#{view}", "role") == "img" and page.get_attribute(f"#{view}", "aria-label")
    # The attention heatmaps take the app's one weight scale (webapp/site_pages/figure_style.py), as the lesson's do.
    scales = page.evaluate("""() => [JSON.parse(document.getElementById('figure-style').textContent).weight_scale,
                                     document.getElementById('view-cross').data[0].colorscale]""")
    assert scales[0] and scales[1] == scales[0]


def test_the_student_picks_the_step_whose_probabilities_are_shown(asgi_server, demo, zh_en, page_factory, shared_worker):
    shared_worker("interactive")
    page = page_factory("en-US")
    playground_ready(page, asgi_server)
    page.get_by_test_id("run").click()
    page.wait_for_function(f"{STATUS}.startsWith('Done')", timeout=60_000)
    title = "document.getElementById('view-topk').layout.xaxis.title.text"
    steps = page.eval_on_selector_all("[data-testid=topk-step] option", "els => els.length") - 1
    assert steps == page.evaluate("document.querySelectorAll('[data-testid=output-tokens] .pg-tok').length")
    assert page.evaluate(title) == f"step {steps - 1}"  # the latest, unless the student picks one
    page.get_by_test_id("topk-step").select_option("0")
    page.wait_for_function(f"{title} === 'step 0'")
    first = page.evaluate("document.getElementById('view-topk').data[0].x")
    assert first and first[0] == page.evaluate("document.querySelector('[data-testid=output-tokens] .pg-tok').firstChild.textContent")


def test_a_single_validation_point_gets_an_axis_from_zero(asgi_server, demo, page_factory):
    from django.contrib.auth.models import User

    from tests.fixtures.training import tiny_config
    from webapp.training.models import TrainingJob

    config = tiny_config(steps=400)
    job = TrainingJob.objects.create(owner=User.objects.get(username="admin"), task="reverse", steps=400, step=210,
                                     status="cancelled", config={"train": config, "task_options": {}},
                                     history=[{"step": s, "loss": 3 - s / 100, "lr": 1e-3} for s in range(10, 211, 10)],
                                     evals=[{"step": 200, "exact_match": 0.5, "token_accuracy": 0.8, "bleu": 60.0}])
    page = page_factory("en-US")
    sign_in(page, asgi_server, "admin")
    page.goto(f"{asgi_server}/training/jobs/{job.pk}/")
    page.wait_for_selector("#eval-plot .xtick text")
    low, high = page.evaluate("document.getElementById('eval-plot')._fullLayout.xaxis.range")
    assert low <= 0 and high >= 200  # not 199 to 201
    assert page.get_attribute("#eval-plot", "role") == "img"
    # The validation chart says what its one axis carries: three scores on 0..1, BLEU among them divided by 100.
    assert page.evaluate("document.getElementById('eval-plot').layout.yaxis.title.text") == "score (0–1; BLEU ÷ 100)"
    assert "score (0–1; BLEU ÷ 100)" in page.get_attribute("#eval-plot", "aria-label")
