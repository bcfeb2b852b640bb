"""A request refused with words for its user: one shape for every app's refusals (a socket's error frame, a page's
message)."""
from __future__ import annotations


class Refusal(ValueError):
    """`code` names the refusal for a program (the error frame's code), `message` says it to a person."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
