"""Revealing an exercise's answer (POST) notes the reveal only; the instructor's table marks a page visited when the
student opened it."""
from __future__ import annotations

import re

import pytest

from webapp.lesson.content import EXERCISES

pytestmark = pytest.mark.django_db


def cells(client, student) -> list[str]:
    page = client.get("/lesson/progress/").content.decode()
    row = re.search(f'data-testid="progress-{student.get_username()}">(.*?)</tr>', page, re.S).group(1)
    return re.findall(r"<td>(.*?)</td>", row)


def test_revealing_answers_without_opening_the_pages_marks_no_page_visited(client_as, student, admin):
    client = client_as(student)
    revealed = [exercise["id"] for exercises in EXERCISES.values() for exercise in exercises][:12]
    for exercise in revealed:
        assert client.post(f"/lesson/exercises/{exercise}/reveal/", HTTP_HX_REQUEST="true").status_code == 200
    shown = cells(client_as(admin), student)
    assert not any("✓" in cell for cell in shown)  # twelve reveals, no visit
    assert sum(int(n) for cell in shown for n in re.findall(r"(\d+)/\d+", cell)) == len(revealed)  # counted
    client.get("/lesson/encoder/")
    shown = cells(client_as(admin), student)
    assert sum("✓" in cell for cell in shown) == 1
