"""The decoder page's example of a confident wrong output: what the shipped model says, its confidence and the word it
lost, in both languages, as scripts/coverage_figures.py computed it (tests/modelcore/decoding/test_coverage.py
decodes it again)."""
from __future__ import annotations

import json

import pytest

from modelcore.decoding.coverage import COVERAGE_FILE
from modelcore.folder import SHIPPED_DIR
from tests.webapp.lesson.test_pages import get, text_of

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("language", "words"), [
    ("en", ("with a confidence of {p} %", "is not in the translation", "not its accuracy")),
    ("zh", ("置信度 {p} %", "译文中没有", "不是它的准确率")),
])
def test_the_decoder_page_shows_a_confident_output_and_the_word_it_lost(client_as, student, zh_en, language, words):
    example = json.loads((SHIPPED_DIR / "zh-en-hsk" / COVERAGE_FILE).read_text(encoding="utf-8"))["lesson_example"]
    assert example["confidence"] > example["confidence_threshold"] and example["missing"]
    text = " ".join(text_of(get(client_as(student), "/lesson/decoder/", language)).split())
    percent = round(100 * example["confidence"])
    assert example["source"] in text and example["output"] in text
    assert all(word in text for word in example["missing"])
    for phrase in words:
        assert phrase.format(p=percent) in text, phrase
