"""The students' docs exist in Chinese as fully as in English: the same sections, tables and exercises."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
CJK = re.compile(r"[\u4e00-\u9fff]")


def sections(text: str) -> list[str]:
    return re.findall(r"^#{1,3} .+$", text, re.M)


def tables(text: str) -> int:
    return len(re.findall(r"^\|[-| ]+\|$", text, re.M))


@pytest.mark.parametrize("name", ["experiments", "tasks"])
def test_each_students_doc_has_a_chinese_version_with_the_same_structure(name):
    english = (DOCS / f"{name}.md").read_text(encoding="utf-8")
    chinese = (DOCS / f"{name}.zh.md").read_text(encoding="utf-8")
    assert f"{name}.zh.md" in english and f"{name}.md" in chinese  # each links to the other
    assert len(sections(chinese)) == len(sections(english))
    assert tables(chinese) == tables(english)
    assert len(re.findall(r"```", chinese)) == len(re.findall(r"```", english))
    prose = [line for line in chinese.splitlines() if line.strip() and not line.startswith(("|", "`", "    "))]
    assert sum(bool(CJK.search(line)) for line in prose) / len(prose) > 0.8


def test_the_student_guides_chinese_part_carries_the_whole_guide():
    text = (DOCS / "student-guide.md").read_text(encoding="utf-8")
    english, chinese = text.split("## 中文版", 1)
    english_sections = [s for s in sections(english) if not s.startswith("# ")]
    assert len(sections("## " + chinese)) - 1 == len(english_sections)
    exercises = lambda part: re.findall(r"^\d\. \*\*", part, re.M)  # noqa: E731
    assert len(exercises(chinese)) == len(exercises(english)) == 6
    views = lambda part: re.findall(r"^- \*\*", part, re.M)  # noqa: E731
    assert len(views(chinese)) == len(views(english))
    assert "教师强制" in chinese and "查询来自解码器" in chinese  # the corrected explanations, not only the English
