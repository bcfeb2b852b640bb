"""The home page promises only what ships: every link it shows a role opens for that role."""
from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db


def links_of(html: str) -> list[str]:
    """Every local link of a page (href of its <a> elements)."""
    return sorted({href for href in re.findall(r'<a\b[^>]*\bhref="([^"]+)"', html) if href.startswith("/")})


@pytest.mark.parametrize("who", ["student", "instructor", "admin"])
def test_every_link_on_the_home_page_opens_for_that_role(request, client_as, who):
    client = client_as(request.getfixturevalue(who))
    home = client.get("/")
    assert home.status_code == 200
    links = links_of(home.content.decode())
    assert "/playground/" in links and "/experiments/norm-position/" in links
    for href in links:
        assert client.get(href).status_code == 200, f"{who}: {href}"


def test_only_an_admin_is_offered_training_and_the_django_admin(client_as, student, instructor, admin):
    for user in (student, instructor):
        links = links_of(client_as(user).get("/").content.decode())
        assert not [href for href in links if href.startswith(("/training/", "/admin/"))], user.username
    links = links_of(client_as(admin).get("/").content.decode())
    assert "/training/new/" in links and "/admin/" in links


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_students_and_instructors_are_offered_the_lesson(client_as, student, instructor, language):
    for user in (student, instructor):
        client = client_as(user)
        client.cookies["django_language"] = language
        assert "/lesson/" in links_of(client.get("/").content.decode()), (user.username, language)


def test_students_and_instructors_are_offered_the_live_sessions(client_as, student, instructor):
    for user in (student, instructor):
        assert "/classroom/" in links_of(client_as(user).get("/").content.decode()), user.username


@pytest.mark.parametrize(("language", "words"), [("en", "on small models of the app's own encoder-decoder"),
                                                 ("zh-hans", "编码器-解码器的小模型上比较 Post-LN 与 Pre-LN")])
def test_the_home_page_says_what_the_norm_position_figures_run_on(client_as, student, language, words):
    """The Post-LN against Pre-LN figures come from small fresh or freshly trained models, not the shipped translators."""
    import html

    client = client_as(student)
    client.cookies["django_language"] = language
    page = html.unescape(client.get("/").content.decode())
    assert words in page and "Pre-LN on the real model" not in page
