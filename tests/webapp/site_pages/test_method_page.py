"""A form's target opened by a visit: a 405 page in the visitor's language, not a blank one."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db
FORM_TARGET = "/experiments/launch/"  # answers POST only (the experiment form's htmx target)


@pytest.mark.parametrize(("language", "heading"), [("en", "This address is not a page"), ("zh-hans", "这个地址不是页面")])
def test_a_visit_gets_a_page_that_says_why(client_as, student, language, heading):
    response = client_as(student).get(FORM_TARGET, HTTP_ACCEPT="text/html,application/xhtml+xml",
                                      HTTP_ACCEPT_LANGUAGE=language)
    body = response.content.decode()
    assert response.status_code == 405 and response["Allow"] == "POST"
    assert heading in body and 'href="/"' in body and response["Content-Type"].startswith("text/html")


def test_scripts_keep_the_bare_answer(client_as, student):
    htmx = client_as(student).get(FORM_TARGET, HTTP_ACCEPT="text/html", HTTP_HX_REQUEST="true")
    plain = client_as(student).get(FORM_TARGET, HTTP_ACCEPT="application/json")
    assert htmx.status_code == plain.status_code == 405 and htmx.content == plain.content == b""
