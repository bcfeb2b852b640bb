"""The Chinese the lesson and the experiments speak: one term for each idea, no calques, no English labels left."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.utils import translation

from tests.webapp.lesson.test_pages import PATHS, get, text_of
from webapp.lesson.content import ERRATA
from webapp.lesson.models import TrainingRun
from webapp.lesson.services import _key

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[3]
# The wording each idea keeps, and the variants (or calques) that must not come back beside it.
ONE_TERM = {"分散程度": ["离散度"], "滑动平均": ["移动平均"], "防止梯度消失": ["保持活力"]}
STILTED = ["带走了多远", "读不懂", "无法回答这个请求", "同样多个向量"]
CHINESE_TEXTS = ["locale/zh_Hans/LC_MESSAGES/django.po", "webapp/lesson/locale/zh_Hans/LC_MESSAGES/django.po",
                 "docs/experiments.zh.md", "webapp/lesson/content.py", *map(str, Path(ROOT).glob("templates/lesson/zh/*.html"))]


def chinese_of(path: str) -> str:
    """What a reader sees of a file in Chinese: a catalogue's msgstr lines, or the whole text less the lesson's own
    quotes (the errata quote the lesson as written, 移动平均 included)."""
    text = (ROOT / path).read_text(encoding="utf-8")
    if path.endswith(".po"):
        return "\n".join(line for line in text.splitlines() if not line.startswith(("msgid", "#")))
    for erratum in ERRATA.values():
        text = text.replace(erratum.quote, "")
    return text


@pytest.mark.parametrize("path", CHINESE_TEXTS)
def test_each_idea_has_one_chinese_term_and_no_calque(path):
    text = chinese_of(path)
    for kept, variants in ONE_TERM.items():
        assert not [v for v in variants if v in text], (path, kept)
    assert not [s for s in STILTED if s in text], path


def test_the_demonstrations_refusals_read_as_plain_chinese():
    with translation.override("zh-hans"):
        assert translation.gettext("The model cannot read part of that sentence.") == "句子里有模型没见过的字。"
        assert translation.gettext("That request cannot be answered.") == "无法处理这个请求。"
        assert translation.gettext("spread") == "分散程度"


@pytest.mark.parametrize(("kind", "path"), [("mask", "/lesson/decoder/"), ("ffn", "/lesson/questions/")])
def test_the_chinese_training_comparisons_carry_no_english_label(client_as, student, zh_en, kind, path):
    from modelcore.experiments import torch_threads
    from modelcore.lesson import run_training

    with torch_threads(1):
        result = {"kind": kind, **run_training(kind, {"steps": 2})}
    TrainingRun.objects.create(key=_key("train", kind, {}), kind=kind, params={}, result=result,
                               status=TrainingRun.Status.SUCCEEDED, progress=1.0)
    page = get(client_as(student), path, "zh")
    text = text_of(page)
    assert 'data-testid="run-table"' in page.content.decode()  # the finished comparison is on the page
    assert not re.search(r"causal mask|no mask|d_ff = \d+ × d_model", text)  # the arms' labels
    assert "2 + 2 层" in text  # what they train, in Chinese


def test_every_lesson_page_in_chinese_keeps_its_terms(client_as, student, zh_en):
    client = client_as(student)
    for path in PATHS.values():
        text = text_of(get(client, path, "zh"))
        for erratum in ERRATA.values():
            text = text.replace(erratum.quote, "")
        assert "离散度" not in text and "移动平均" not in text, path
