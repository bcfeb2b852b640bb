"""The top navigation names the areas each role uses: the lesson and the classroom for every signed-in role."""
from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db


def nav_of(html: str) -> dict[str, str]:
    """The main navigation's links: href -> its text."""
    nav = re.search(r'<nav class="nav"[^>]*>(.*?)</nav>', html, re.S)
    assert nav, "the page has its main navigation"
    return {href: re.sub(r"<[^>]+>|\s+", " ", text).strip()
            for href, text in re.findall(r'<a\b[^>]*\bhref="([^"]+)"[^>]*>(.*?)</a>', nav.group(1), re.S)}


@pytest.mark.parametrize("who", ["student", "instructor", "admin"])
@pytest.mark.parametrize(("language", "lesson", "classroom"), [("en", "Lesson", "Classroom"), ("zh-hans", "课程", "课堂")])
def test_every_role_finds_the_lesson_and_the_classroom_in_the_navigation(request, client_as, who, language, lesson,
                                                                        classroom):
    client = client_as(request.getfixturevalue(who))
    client.cookies["django_language"] = language
    for page in ("/", "/playground/", "/models/"):  # on every page, not only the home page's list
        nav = nav_of(client.get(page).content.decode())
        assert nav.get("/lesson/") == lesson and nav.get("/classroom/") == classroom, (who, page, nav)
    for href in ("/lesson/", "/classroom/"):
        assert client.get(href).status_code == 200, (who, href)


def test_a_visitor_not_signed_in_gets_no_navigation_links(client):
    assert nav_of(client.get("/accounts/login/").content.decode()) == {}
