"""The model's own answer to a question, read from the worker's frame of the step the question is about.

Every attention row is read through `cross_row`, the one place that knows how a step frame
carries cross-attention (docs/protocol.md), so a change of that encoding changes one function.
"""
from __future__ import annotations

import base64
from typing import Any

from modelcore.tokenization import EOS, EOS_ID
from webapp.classroom.models import Question

YES, NO = "yes", "no"


def step_choice(frame: dict[str, Any]) -> dict[str, Any]:
    """The token a step chose: the token frame itself, or the best beam of a beams frame."""
    if frame.get("type") == "beams":
        beams = frame.get("beams") or [{}]
        return beams[0]
    return frame


def token_text(choice: dict[str, Any]) -> str:
    return EOS if choice.get("id") == EOS_ID else str(choice.get("token") or "")


def cross_row(choice: dict[str, Any], layer: int | None, head: str) -> list[float] | None:
    """This step's cross-attention over the source for one decoder layer (default: the last) and head (or the mean)."""
    attention = choice.get("attention") or {}
    layers = attention.get("cross")
    if not layers:
        return None
    if isinstance(layers, str):  # compact frames: the view's one row, a byte per weight, base64 (docs/protocol.md)
        scale = attention.get("scale", 255)
        return [byte / scale for byte in base64.b64decode(layers)]
    heads = layers[min(layer if layer is not None else len(layers) - 1, len(layers) - 1)]
    if head != "mean":
        return list(heads[min(int(head), len(heads) - 1)])
    return [sum(column) / len(heads) for column in zip(*heads, strict=True)]


def next_token_options(frame: dict[str, Any]) -> list[str]:
    """The model's top-k at this step, without probabilities and in no telling order (alphabetical)."""
    choice = step_choice(frame)
    alternatives = choice.get("alternatives") or frame.get("alternatives") or []
    tokens = {EOS if alt.get("id") == EOS_ID else str(alt.get("token") or "") for alt in alternatives}
    tokens.add(token_text(choice))
    return sorted(t for t in tokens if t)


def model_answer(question: Question, frame: dict[str, Any], src_tokens: list[str]) -> str | None:
    """What the model did at the question's step, in the form students answered; None when the frame cannot say."""
    choice = step_choice(frame)
    if question.kind == Question.NEXT_TOKEN:
        return token_text(choice)
    if question.kind == Question.STOP:
        return YES if choice.get("id") == EOS_ID else NO
    if question.kind == Question.ATTENTION:
        row = cross_row(choice, question.layer, question.head)
        if not row:
            return None
        best = max(range(len(row)), key=row.__getitem__)
        return source_label(best, src_tokens)
    return None


def source_label(index: int, src_tokens: list[str]) -> str:
    """A source position as students click it: its index and token (the same token may occur twice)."""
    token = src_tokens[index] if index < len(src_tokens) else "?"
    return f"{index}: {token}"


def source_options(src_tokens: list[str]) -> list[str]:
    return [source_label(i, src_tokens) for i in range(len(src_tokens))]
