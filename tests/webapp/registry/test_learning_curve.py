"""The real-sentence model's card: what more real data does, and the real sentences alone, from learning_curve.json."""
from __future__ import annotations

import json
import re

import pytest

from modelcore.checkpoint import load_model, resolve_model_path

pytestmark = pytest.mark.django_db

CURVE = json.loads((resolve_model_path("zh-en-hsk") / "learning_curve.json").read_text(encoding="utf-8"))


def _figure(html: str) -> dict:
    return json.loads(re.search(r'<script id="learning-curve-data" type="application/json">(.*?)</script>', html, re.S)[1])


def _rows(html: str) -> list[list[str]]:
    table = re.search(r'data-testid="learning-curve-table">(.*?)</table>', html, re.S)[1]
    body = re.search(r"<tbody>(.*?)</tbody>", table, re.S)[1]
    return [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def test_the_curve_ends_at_the_shipped_model_itself():
    """The 'all real pairs' point is the shipped model: its own test figures, its own training data."""
    last, test = CURVE["points"][-1], load_model("zh-en-hsk").metrics["test"]
    assert last["bleu"] == pytest.approx(test["bleu"], abs=1e-6)
    assert last["exact_match"] == pytest.approx(test["exact_match"], abs=1e-9)
    assert [p["fraction"] for p in CURVE["points"]] == [0.25, 0.5, 1.0, 1.0]
    # a quarter, a half and all of the HSK sentences, then all of them (each three times, the 72 stand-ins left out)
    # with Tatoeba's pairs (less the one sentence in 25 kept out for the calibration)
    assert [p["real_pairs"] for p in CURVE["points"]] == [938, 1877, 3754, 57_776] == sorted(
        {p["real_pairs"] for p in CURVE["points"]})
    assert CURVE["real_only"]["generated"] == 0 and CURVE["real_only"]["real_pairs"] == 3754
    assert CURVE["test_sentences"] == 400


def test_the_card_draws_the_curve_and_tabulates_every_run(client_as, student, shipped):
    html = client_as(student).get("/models/zh-en-hsk/").content.decode()
    figure = _figure(html)
    bleu, chrf, alone_bleu, alone_chrf = figure["data"]
    assert bleu["x"] == [938, 1877, 3754, 57_776] and bleu["y"] == [p["bleu"] for p in CURVE["points"]]
    assert chrf["y"] == [p["chrf"] for p in CURVE["points"]]
    assert alone_bleu["y"] == [CURVE["real_only"]["bleu"]] and alone_chrf["y"] == [CURVE["real_only"]["chrf"]]
    assert figure["layout"]["xaxis"]["title"]["text"] == "real training pairs"
    assert f"Real sentences alone: BLEU {CURVE['real_only']['bleu']:.2f}" in figure["alt"]
    rows = _rows(html)
    assert rows[-1][0] == "3754 real, nothing generated"
    assert [row[1] for row in rows] == [f"{p['bleu']:.2f}" for p in [*CURVE["points"], CURVE["real_only"]]]
    assert [row[4] for row in rows] == [f"{p['grammar_bleu']:.1f}" for p in [*CURVE["points"], CURVE["real_only"]]]
    reading = re.search(r'data-testid="learning-curve">.*?<p>(.*?)</p>', html, re.S)[1]
    assert f"with all 3754, {CURVE['points'][2]['bleu']:.2f}" in reading  # the HSK recipe's runs read as one curve
    assert f"alone score BLEU {CURVE['real_only']['bleu']:.2f}" in reading


def test_it_reads_in_chinese(client_as, student, shipped):
    html = client_as(student).get("/models/zh-en-hsk/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "更多数据带来什么" in html and "3754 对真实，没有生成句子" in html
    assert _figure(html)["layout"]["xaxis"]["title"]["text"] == "真实训练句对数"


def test_a_model_without_a_curve_shows_none(client_as, student, shipped):
    html = client_as(student).get("/models/zh-en-post/").content.decode()
    assert 'data-testid="learning-curve"' not in html


def test_the_reading_says_what_tatoebas_pairs_added(client_as, student, shipped):
    html = client_as(student).get("/models/zh-en-hsk/").content.decode()
    reading = re.search(r'data-testid="learning-curve">.*?<p>(.*?)</p>', html, re.S)[1]
    last = CURVE["points"][-1]
    assert f"With Tatoeba&#x27;s everyday pairs added ({last['real_pairs']} real pairs in all" in reading
    assert f"BLEU {last['bleu']:.2f} and chrF {last['chrf']:.1f}" in reading
