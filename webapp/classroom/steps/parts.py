"""A part of a lesson page on every screen (the console's `lesson`)."""
from __future__ import annotations

from typing import Any

from django.urls import reverse

from webapp.classroom import services
from webapp.classroom.errors import ClassroomError
from webapp.classroom.models import LiveSession
from webapp.lesson.parts import TEMPLATES, Part, lesson_part

FIELDS = ("page", "part")


def part_checked(fields: dict[str, Any]) -> Part:
    """A `lesson` step's fields -> the part it names; ClassroomError naming what is wrong."""
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise ClassroomError("bad_params", f"unknown field {unknown[0][:40]!r}")
    part = lesson_part(fields.get("page"), fields.get("part", ""))
    if part is None:
        shown = f"{fields.get('page')!r:.50}#{fields.get('part', '')!r:.50}"
        raise ClassroomError("bad_params", f"no lesson part {shown}: name a lesson page (overview, encoder, decoder, "
                                           "residual-norm, questions, glossary) and one of its parts (page, part)")
    return part


def lesson_frame(lesson: dict[str, Any] | None) -> dict[str, Any] | None:
    """The `lesson` frame every screen gets for the part on show (None: no part has been shown)."""
    if not lesson:
        return None
    url = reverse(f"lesson:{TEMPLATES[lesson['page']]}")
    fragment = reverse("lesson:part", args=[lesson["page"], lesson["part"]]) if lesson["part"] else \
        reverse("lesson:part_top", args=[lesson["page"]])
    return {"type": "lesson", "page": lesson["page"], "part": lesson["part"], "url": url, "fragment": fragment}


def lesson_show(*, session: LiveSession, frame: dict[str, Any]) -> dict[str, Any]:
    """A console's `lesson` frame: the named part goes on every screen (the class's last demonstration goes off)."""
    part = part_checked({k: v for k, v in frame.items() if k != "type"})
    lesson = {"page": part.page, "part": part.id}
    services.session_state_update(session=session, lesson=lesson, demo=None, experiment_shown=None)
    return lesson
