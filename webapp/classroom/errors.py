"""The classroom's refusals, as the socket's error frames and the pages' messages carry them."""
from __future__ import annotations

from webapp.site_pages.refusal import Refusal


class ClassroomError(Refusal):
    """An action the classroom refuses; `code` goes into the error frame."""
