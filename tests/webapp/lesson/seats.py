"""Relating a student to an instructor as the classroom does (when the classroom app is installed)."""
from __future__ import annotations

from typing import Any

from django.apps import apps


def seat(student: Any, instructor: Any, code: str = "LESSON1") -> bool:
    """Put the student in a live session of the instructor; False when there is no classroom app."""
    if not apps.is_installed("webapp.classroom"):
        return False
    session_model = apps.get_model("classroom", "LiveSession")
    session, _ = session_model.objects.get_or_create(code=code, defaults={"instructor": instructor, "title": "lesson",
                                                                           "model_name": "zh-en-post"})
    apps.get_model("classroom", "Participant").objects.get_or_create(session=session, user=student)
    return True
