"""The console's `run` frame, checked before anything reaches the database or a worker (docs/protocol.md)."""
from __future__ import annotations

from typing import Any

from webapp.classroom.errors import ClassroomError
from webapp.playground.stream import DecodeRequest, ProtocolError, decode_request

RUN_KEYS = ("source", "strategy", "beam_size", "temperature", "top_k", "top_p", "seed", "max_len", "min_len",
            "pace_ms", "step_mode")


def parse_run(frame: dict[str, Any], session_model: str, view: dict[str, Any]) -> tuple[str, DecodeRequest]:
    """A `run` frame -> the model's name and the checked decode; ClassroomError naming what is wrong.

    Every screen sees the attention in the session's `view`, with the page's alternatives.
    """
    model_name = frame.get("model", session_model)
    if not isinstance(model_name, str):
        raise ClassroomError("bad_params", "model must be a model's name")
    extra = {k: v for k, v in frame.items() if k not in ("type", "model")}
    unknown = sorted(set(extra) - set(RUN_KEYS))
    if unknown:
        raise ClassroomError("bad_params", f"unknown field {unknown[0][:40]!r}")
    try:
        request = decode_request({"type": "decode", "model": model_name, "attention": True, "view": view,
                                  "top_alternatives": 8, **extra})
    except ProtocolError as error:
        raise ClassroomError(error.code, error.message) from error
    return model_name, request
