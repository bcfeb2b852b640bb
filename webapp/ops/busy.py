"""A database too busy to answer in time is a 429 with Retry-After, never a 500."""
from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import OperationalError
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _

log = logging.getLogger(__name__)

RETRY_AFTER_S = 2
# What SQLite (after its busy timeout) and PostgreSQL (lock or statement timeout, serialization) say.
BUSY_WORDS = ("database is locked", "database table is locked", "lock timeout", "could not serialize",
              "deadlock detected", "canceling statement due to lock timeout")


class BusyDatabaseMiddleware:
    """Turns an OperationalError that means "busy, try again" into 429 Too Many Requests."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, OperationalError) or not any(w in str(exception).lower() for w in BUSY_WORDS):
            return None
        log.warning("database busy on %s %s: %s", request.method, request.path, exception)
        response = HttpResponse(_("The server is busy; try again in a moment."), status=429,
                                content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(RETRY_AFTER_S)
        return response
