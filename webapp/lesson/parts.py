"""The parts of the lesson's pages an instructor can put on every screen of a live session: each `<h2 id>` of a
page's template, its title in the reader's language, and the demonstration its part holds (if any).

Read from the templates themselves (once per process and language), so that a part renamed or added there is a part
here, with no second list to keep in step."""
from __future__ import annotations

import functools
import html
import re
import time
from collections import OrderedDict
from collections.abc import Callable
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


# -- a part as every screen of a class reads it ----------------------------------------------------------------

_DEMO_BLOCK = '<div class="demo">'
_CSRF = re.compile(r'<input type="hidden" name="csrfmiddlewaretoken"[^>]*>')
PART_CACHE_S = 60.0  # a page's figures follow the registry (the shipped model's card): a minute's copy is fresh enough
_kept: OrderedDict[tuple[str, str, str], tuple[float, str]] = OrderedDict()


def _without_demos(text: str) -> str:
    """The page's demonstration forms cut out (each `<div class="demo">` with everything inside it): the class's
    demonstration is the console's, and a form carries its reader's CSRF token."""
    while (start := text.find(_DEMO_BLOCK)) >= 0:
        depth, at = 0, start
        for match in re.finditer(r"<div\b|</div>", text[start:]):
            depth += 1 if match.group() != "</div>" else -1
            if depth == 0:
                at = start + match.end()
                break
        else:
            return text[:start]  # unbalanced (never in our templates): drop the rest rather than leak a form
        text = text[:start] + text[at:]
    return _CSRF.sub("", text)


def part_slice(page_html: str, part: str) -> str:
    """From the rendered lesson page, the part's heading and what follows it up to the next heading (or the
    exercises, or the end of the page's article); `""`: the page's title and lead. Wrapped in the page's
    `<article class="lesson">` so that the screen reads it as it reads the page."""
    begin = page_html.find('<article class="lesson"')
    begin = page_html.find(">", begin) + 1
    end = page_html.find("</article>", begin)
    body = page_html[begin:end]
    if part:
        start = body.find(f'<h2 id="{part}">')
        body = body[start:] if start >= 0 else ""
    stops = [i for i in (body.find("<h2", 1), body.find('<section class="exercises"')) if i > 0]
    return f'<article class="lesson">{_without_demos(body[:min(stops)] if stops else body)}</article>'


def part_html(page: str, part: str, render_page: Callable[[], str]) -> str:
    """A part as every screen reads it, in the active language: sliced from the page `render_page` renders, kept a
    minute per page, part and language, so that a class fetching it together costs the web process one rendering."""
    key = (page, part, lang())
    now = time.monotonic()
    found = _kept.get(key)
    if found is not None and found[0] > now:
        return found[1]
    text = part_slice(render_page(), part)
    _kept[key] = (now + PART_CACHE_S, text)
    _kept.move_to_end(key)
    while len(_kept) > 128:
        _kept.popitem(last=False)
    return text
