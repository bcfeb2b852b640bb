"""Redis keys shared by the socket (web process) and the decoding loop (worker process)."""
from __future__ import annotations

PREFIX = "playground"
CONTROL_TTL_S = 600  # a cancel flag or step credits outlive any request they could concern


def cancel_key(request_id: str) -> str:
    """Set by the socket when its client cancels or leaves; read by the loop between steps."""
    return f"{PREFIX}:cancel:{request_id}"


def step_key(request_id: str) -> str:
    """A list: one entry per `step` frame not yet used (step mode)."""
    return f"{PREFIX}:step:{request_id}"


def running_key(user_id: int) -> str:
    """Sorted set of a user's running requests, scored by when the entry expires."""
    return f"{PREFIX}:running:{user_id}"


def rate_key(user_id: int) -> str:
    """Sorted set of a user's requests in the last minute, scored by when they came."""
    return f"{PREFIX}:rate:{user_id}"


def alive_key(request_id: str) -> str:
    """Set by the loop at each beat for every request it holds, for ALIVE_TTL_S: the worker's own word that it holds
    it, which a web process that stalled reads before calling the request lost."""
    return f"{PREFIX}:alive:{request_id}"


ALIVE_TTL_S = 3


def ended_key(request_id: str) -> str:
    """Written by the loop when a request ends: why and after how many steps (JSON), for a while."""
    return f"{PREFIX}:ended:{request_id}"


def resync_key(request_id: str) -> str:
    """Set by the socket when its client saw a gap in a running request's `seq`; read by the loop between steps."""
    return f"{PREFIX}:resync:{request_id}"


def state_key(request_id: str) -> str:
    """Every frame of an ended request as the worker sent it (a JSON list), for a client's late resync."""
    return f"{PREFIX}:state:{request_id}"


def view_key(request_id: str) -> str:
    """Set by the socket (JSON) when its client switches layer or head of a running request; read by the loop."""
    return f"{PREFIX}:view:{request_id}"


def attention_key(request_id: str) -> str:
    """Every layer and head of an ended request's attention (attention.pack), for a client's `view` frames."""
    return f"{PREFIX}:attention:{request_id}"
