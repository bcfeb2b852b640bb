"""The playground's one door for whoever follows a decode from outside the playground's own socket (a live session):
make and send the job, step it, cancel it, ask its worker for its whole copy or another view of its attention, read
the copy its worker kept once it ended, its state as text, the group its frames go to, the words of a lost request,
and the one watch over decodes in flight (webapp/playground/watchdog.py).

Everything a follower needs of the playground's stream is named here; how the playground does each (its relay, its
socket, its Redis keys) stays behind it.
"""
from __future__ import annotations

from webapp.playground.handoff import job_send
from webapp.playground.protocol import (
    CATCHING_UP,
    LOST_MESSAGES,
    DecodeRequest,
    ProtocolError,
    View,
    catching_up_frame,
    parse_view_fields,
    state_text,
)
from webapp.playground.relay import group_target
from webapp.playground.services import (
    attention_view,
    decode_cancel,
    decode_request,
    decode_step,
    ended_attention,
    ended_state,
    new_job,
    request_resync,
)
from webapp.playground.watchdog import NO_WORKER, WORKER_LOST, Watched, watchdog

__all__ = [
    "CATCHING_UP", "LOST_MESSAGES", "NO_WORKER", "WORKER_LOST", "DecodeRequest", "ProtocolError", "View", "Watched",
    "attention_view", "catching_up_frame", "decode_cancel", "decode_request", "decode_step", "ended_attention",
    "ended_state", "group_target", "job_send", "lost_frame", "new_job", "parse_view_fields", "request_resync",
    "state_text", "watchdog",
]


def lost_frame(request_id: str, code: str) -> dict[str, object]:
    """The `error` frame that ends a request no worker answers for (NO_WORKER, WORKER_LOST)."""
    return {"type": "error", "code": code, "request_id": request_id, "message": LOST_MESSAGES[code]}
