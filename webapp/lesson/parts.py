"""The parts of the lesson's pages an instructor can put on every screen of a live session: each `<h2 id>` of a
page's template, its title in the reader's language, and the demonstration its part holds (if any).

Read from the templates themselves (once per process and language), so that a part renamed or added there is a part
here, with no second list to keep in step."""
from __future__ import annotations

import functools
import html
import re
from dataclasses import dataclass

from django.conf import settings

from webapp.lesson.content import PAGES, lang

TEMPLATES = {"overview": "overview", "encoder": "encoder", "decoder": "decoder", "residual-norm": "residual_norm",
             "questions": "questions", "glossary": "glossary"}
_HEADING = re.compile(r'<h2 id="(?P<id>[\w-]+)">(?P<title>.*?)</h2>', re.S)
_DEMO = re.compile(r'demo_form\.html" with kind="(?P<kind>\w+)"')
_TAG = re.compile(r"<[^>]+>|\{[%{].*?[%}]\}")


@dataclass(frozen=True)
class Part:
    page: str
    id: str
    title: str
    demo: str | None  # the demonstration's kind (webapp.lesson.services.DEMO_KINDS), if the part has one


def _template(page: str, language: str) -> str:
    folder = settings.BASE_DIR / "templates" / "lesson" / language
    return (folder / f"{TEMPLATES[page]}.html").read_text(encoding="utf-8")


@functools.lru_cache(maxsize=4)
def _parts(language: str) -> dict[str, tuple[Part, ...]]:
    found: dict[str, tuple[Part, ...]] = {}
    for page in PAGES:
        text = _template(page, language)
        headings = list(_HEADING.finditer(text))
        parts = []
        for i, heading in enumerate(headings):
            body = text[heading.end():headings[i + 1].start() if i + 1 < len(headings) else len(text)]
            demo = _DEMO.search(body)
            title = " ".join(html.unescape(_TAG.sub("", heading["title"])).split())
            parts.append(Part(page, heading["id"], title, demo["kind"] if demo else None))
        found[page] = tuple(parts)
    return found


def lesson_parts() -> dict[str, tuple[Part, ...]]:
    """Every page's parts, in page order, titled in the active language."""
    return _parts(lang())


def lesson_part(page: object, part: object) -> Part | None:
    """The named part of the named page (None when either is unknown); part "" is the page's top."""
    if not isinstance(page, str) or page not in PAGES or not isinstance(part, str):
        return None
    if part == "":
        return Part(page, "", "", None)
    return next((p for p in lesson_parts()[page] if p.id == part), None)
