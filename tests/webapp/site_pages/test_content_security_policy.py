"""Every response carries the Content-Security-Policy header: scripts from this site only, never inline or eval'd."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def directives(header: str) -> dict[str, list[str]]:
    """The policy's directives, name -> sources."""
    parts = [part.split() for part in header.split(";") if part.strip()]
    return {part[0]: part[1:] for part in parts}


@pytest.mark.parametrize("path", ["/accounts/login/", "/no-such-page/"])
def test_an_anonymous_page_carries_the_policy(client, path):
    policy = directives(client.get(path)["Content-Security-Policy"])
    assert policy["script-src"] == ["'self'"]
    assert policy["frame-ancestors"] == ["'none'"] and policy["object-src"] == ["'none'"]


@pytest.mark.parametrize("path", ["/", "/lesson/encoder/", "/classroom/", "/playground/"])
def test_a_signed_in_page_runs_no_inline_or_evaluated_script_and_talks_only_to_this_site(client_as, student, path):
    response = client_as(student).get(path)
    assert response.status_code == 200
    policy = directives(response["Content-Security-Policy"])
    assert policy["script-src"] == ["'self'"]  # no 'unsafe-inline', no 'unsafe-eval', no other host
    assert policy["connect-src"] == ["'self'"]  # fetch and the sockets: this host only
