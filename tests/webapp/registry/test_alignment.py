"""The model card's alignment figure: drawn from the model's alignment.json, in both languages, only where there is one."""
from __future__ import annotations

import json
import re

import pytest
from django.utils import translation

from modelcore.checkpoint import resolve_model_path
from webapp.registry.alignment import alignment_reading

pytestmark = pytest.mark.django_db

SHIPPED = json.loads((resolve_model_path("zh-en-hsk") / "alignment.json").read_text(encoding="utf-8"))


def _figure(html: str) -> dict:
    return json.loads(re.search(r'<script id="alignment-data" type="application/json">(.*?)</script>', html, re.S)[1])


def test_the_real_sentence_model_s_card_shows_its_heads_against_the_glosses(client_as, student, shipped):
    html = client_as(student).get("/models/zh-en-hsk/").content.decode()
    figure = _figure(html)
    heatmap = figure["data"][0]
    assert heatmap["y"] == ["1", "2", "3"] and heatmap["x"] == ["1", "2", "3", "4", "mean over heads"]
    assert heatmap["z"][1][0] == pytest.approx(100 * SHIPPED["heads"][1][0])  # layer 2, head 1
    assert heatmap["z"][2][4] == pytest.approx(100 * SHIPPED["mean_over_heads"][2])
    assert heatmap["text"][0][0] == f"{100 * SHIPPED['heads'][0][0]:.0f}%"
    assert figure["layout"]["yaxis"]["title"]["text"] == "decoder layer"
    assert figure["layout"]["xaxis"]["title"]["text"] == "cross-attention head"
    assert "layer 1: " in figure["alt"] and f"Chance: {100 * SHIPPED['chance']:.1f}%" in figure["alt"]
    caption = re.search(r'data-testid="alignment-caption">(.*?)</figcaption>', html, re.S)[1]
    assert f"Chance (a character picked at random): {100 * SHIPPED['chance']:.1f}%" in caption
    assert f"the {SHIPPED['counted_words']} counted English words, on 400 held-out sentences" in caption
    assert "more often than chance" in html and "Attention is no guaranteed explanation" in html
    assert "js/model_figures.js" in html and 'data-figure="alignment-data"' in html


def test_the_figure_speaks_chinese_on_a_chinese_page(client_as, student, shipped):
    client = client_as(student)
    client.cookies["django_language"] = "zh-hans"
    html = client.get("/models/zh-en-hsk/").content.decode()
    figure = _figure(html)
    assert figure["layout"]["yaxis"]["title"]["text"] == "解码器层"
    assert figure["data"][0]["x"][-1] == "各注意力头的平均"
    assert "注意力与词典释义的对照" in html and "机会水平" in html and "注意力并不保证能解释模型" in html


def test_a_model_without_alignment_figures_shows_none(client_as, student, shipped):
    assert 'data-testid="alignment"' not in client_as(student).get("/models/zh-en-post/").content.decode()
    assert "model_figures.js" not in client_as(student).get("/models/reverse/").content.decode()  # no figure at all


def test_the_reading_names_the_heads_at_or_below_chance():
    figures = {"heads": [[0.5, 0.1], [0.2, 0.3]], "chance": 0.2}
    with translation.override("en"):
        reading = alignment_reading(figures)
    assert reading.startswith("2 of 4 heads look at the glossed word more often than chance (20%)")
    assert "at or below it: layer 1, head 2 · layer 2, head 1." in reading
    assert "The best, layer 1, head 1, does for 50% of the words." in reading
    with translation.override("en"):
        assert alignment_reading({"heads": [[0.5, 0.3]], "chance": 0.2}) == (
            "All 2 heads look at the glossed word more often than chance (20%): the best, layer 1, head 1, for 50% "
            "of the words; the weakest, layer 1, head 2, for 30%.")
