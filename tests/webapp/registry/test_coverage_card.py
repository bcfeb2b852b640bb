"""zh-en-hsk's card: how often the warnings catch an output that loses a word, with the counts of coverage.json."""
from __future__ import annotations

import html as markup
import json
import re

import pytest

from modelcore.checkpoint import resolve_model_path

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("language", "heading"), [("en", "When it drops a word"), ("zh-Hans", "当它漏掉一个词")])
def test_the_card_gives_the_held_out_figures_with_their_counts(client_as, student, shipped, language, heading):
    data = json.loads((resolve_model_path("zh-en-hsk") / "coverage.json").read_text(encoding="utf-8"))
    page = client_as(student).get("/models/zh-en-hsk/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    table = re.search(r'data-testid="coverage-figures">(.*?)</section>', page, re.S)[1]
    text = " ".join(markup.unescape(re.sub(r"<[^>]+>", " ", table)).split())
    assert heading in text
    for name in ("tatoeba_test", "hsk_test"):
        fig = data[name]
        combined = fig["combined"]
        assert f"{combined['lost_caught']} / {fig['lost']} ({round(100 * combined['catch'])} %)" in text
        assert f"{combined['kept_flagged']} / {fig['kept']} ({round(100 * combined['flag'])} %)" in text
    # The confidence thresholds fitted with the check, as percents, in the page's language.
    missing, covered = (round(100 * data["rule"][key]) for key in ("confidence_some_missing", "confidence_all_covered"))
    said = {"en": f"below {missing} % when some checked word is missing and below {covered} % when every one is there",
            "zh-Hans": f"有检查的词缺失时为 {missing} %，检查的词都在时为 {covered} %"}[language]
    assert said in text


def test_a_model_without_the_figures_shows_no_such_table(client_as, student, shipped):
    page = client_as(student).get("/models/zh-en-post/").content.decode()
    assert 'data-testid="coverage-figures"' not in page
