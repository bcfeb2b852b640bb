"""The classroom's refusals, as the socket's error frames and the pages' messages carry them."""
from __future__ import annotations


class ClassroomError(ValueError):
    """An action the classroom refuses; `code` goes into the error frame."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
