"""A zh-en model's card: the reliability diagram of its confidence and what the warning means, from calibration.json."""
from __future__ import annotations

import html as markup
import json
import re

import pytest

from modelcore.checkpoint import resolve_model_path

pytestmark = pytest.mark.django_db


def _calibration(name: str) -> dict:
    return json.loads((resolve_model_path(name) / "calibration.json").read_text(encoding="utf-8"))


def _figure(html: str) -> dict:
    return json.loads(re.search(r'<script id="reliability-data" type="application/json">(.*?)</script>', html, re.S)[1])


def _text(html: str, testid: str) -> str:
    return markup.unescape(re.search(rf'data-testid="{testid}">(.*?)</p>', html, re.S)[1])


@pytest.mark.parametrize("name", ["zh-en-hsk", "zh-en-post", "zh-en-pre"])
def test_the_card_draws_the_reliability_of_the_real_test_sentences(client_as, student, shipped, name):
    data = _calibration(name)
    html = client_as(student).get(f"/models/{name}/").content.decode()
    diagonal, real, grammar, *everyday = _figure(html)["data"]
    assert diagonal["x"] == [0, 1] and diagonal["y"] == [0, 1]
    assert real["y"] == [b["good_share"] for b in data["test"]["reliability"]]
    assert sum(int(t.split()[0]) for t in real["text"]) == data["test"]["sentences"]
    assert sum(int(t.split()[0]) for t in grammar["text"]) == data["grammar_test"]["sentences"]
    # A model trained with Tatoeba's calibration sentences kept out is drawn on them too.
    assert len(everyday) == ("tatoeba_test" in data)
    if everyday:
        assert everyday[0]["y"] == [b["good_share"] for b in data["tatoeba_test"]["reliability"]]
        assert f"On {data['tatoeba_test']['sentences']} everyday sentences from Tatoeba" in _text(
            html, "reliability-measured")
    threshold = f"{100 * data['calibration']['threshold']:.0f} %"
    assert f"below {threshold}. A warning means: do not trust this translation." in _text(html, "reliability-meaning")
    measured = _text(html, "reliability-measured")
    for key in ("test", "tatoeba_test"):  # each set's warned outputs counted, as calibration.json has them
        if key in data:
            t = data[key]
            bad, good = round(t["bad_warned"] * t["bad"]), round(t["good_warned"] * t["good"])
            assert (f"warning comes on {bad} of the {t['bad']} bad outputs ({100 * t['bad_warned']:.1f} %) and {good} "
                    f"of the {t['good']} good ones ({100 * t['good_warned']:.1f} %") in measured, key
    assert "reliability-stale" not in html


def test_the_card_says_the_goal_is_not_met_where_it_is_not(client_as, student, shipped):
    test = _calibration("zh-en-hsk")["test"]
    assert test["good_warned"] > 0.25  # as measured: the card must not claim otherwise
    measured = _text(client_as(student).get("/models/zh-en-hsk/").content.decode(), "reliability-measured")
    assert f"ROC AUC of {test['auc']:.2f}" in measured and measured.endswith("The goal is not met: the model's own "
                                                                           "numbers do not separate its good and bad "
                                                                           "outputs that well.")


def test_the_card_reads_in_chinese(client_as, student, shipped):
    page = client_as(student).get("/models/zh-en-hsk/", HTTP_ACCEPT_LANGUAGE="zh-Hans").content.decode()
    assert "有警告就是说：不要相信这个译文。" in _text(page, "reliability-meaning")
    assert _figure(page)["layout"]["yaxis"]["title"]["text"] == "译得好的比例"


def test_a_model_without_a_calibration_has_no_diagram(client_as, student, shipped):
    assert 'data-testid="reliability"' not in client_as(student).get("/models/reverse/").content.decode()


def test_figures_of_other_weights_are_flagged(client_as, student, shipped):
    from webapp.registry.models import TrainedModel

    TrainedModel.objects.filter(name="zh-en-post").update(checkpoint_hash="retrained")
    html = client_as(student).get("/models/zh-en-post/").content.decode()
    assert 'data-testid="reliability-stale"' in html
