"""A page for an address opened in a way it does not answer (a form's target opened by a visit): a 405 with words."""
from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string


class MethodNotAllowedPageMiddleware:
    """Django's 405 (require_POST and friends) has an empty body: a browser shows a blank page. A visit gets the
    405 page instead (status and Allow header kept); htmx and other scripted requests keep the bare answer."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 405 or response.content or request.headers.get("HX-Request"):
            return response
        if "text/html" not in request.headers.get("Accept", ""):
            return response
        response.content = render_to_string("405.html", request=request)
        response["Content-Type"] = "text/html; charset=utf-8"
        return response
