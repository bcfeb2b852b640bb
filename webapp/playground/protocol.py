"""The `/ws/decode/` frames a client may send, checked before anything reaches a worker (docs/protocol.md), and
the text of the `state` frame every socket sends back.

This module holds only the frame's shape and the playground's caps; the search parameters are
checked by the engine's own DecodeParams (modelcore.decoding.params, which loads no torch), whose
refusal becomes `bad_params` with its message. It loads no torch: the web process and the worker both use it.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from modelcore.decoding.params import DecodeError, DecodeParams
from webapp.playground.attention import MEAN, View
from webapp.realtime.socket_guard import is_text
from webapp.site_pages.refusal import Refusal

MAX_PACE_MS = 5000
MAX_TAG_CHARS = 64
MAX_BEAMS = 8
MAX_ALTERNATIVES = 10
MAX_ID_CHARS = 64
MAX_TEMPERATURE = 10
MAX_TOP_K = 100_000
MAX_SEED = 2**63 - 1  # torch's generator takes a signed 64-bit seed
FLOAT_KEYS = ("temperature", "top_p", "length_penalty")  # real numbers; the rest are integers
MAX_FLOAT_INT = 10**300  # far past any sensible value, well inside a float's range
MAX_VIEW_INDEX = 255  # a layer or head past the model's own is read as its last (attention.View)

# What the playground page asks of every decode besides its form's fields (the page reads it from its
# HTML, bench/stream.py --request playground from here): every view's data, the cache comparison.
PAGE_REQUEST = {"attention": True, "compare_cache": True, "top_alternatives": 8}

# Frame keys that are DecodeParams fields (the rest of its fields are the server's to set).
PARAM_KEYS = (
    "strategy", "max_len", "min_len", "beam_size", "n_best", "length_penalty", "early_stop", "temperature", "top_k",
    "top_p", "seed", "top_alternatives",
)


# The error frames' messages for a request no worker answers for (the playground's and a live session's).
LOST_MESSAGES = {
    "worker_lost": "the worker decoding this request stopped answering (it crashed or restarted); run it again",
    "no_worker": "no decoding worker took this request in time; try again in a minute",
}
# The error frame that says a screen is behind, not that its decode ended: its web process cannot reach Redis (its
# link to the data host is cut) while the decode is silent; the screen is caught up once the link is back.
CATCHING_UP = "catching_up"
CATCHING_UP_MESSAGE = ("this server lost its link to the message service: the decode may go on without this screen, "
                       "which catches up once the link is back")


def catching_up_frame(request_id: str) -> dict[str, object]:
    """The `error` frame that tells a screen its web process is cut from Redis: the decode is not over."""
    return {"type": "error", "code": CATCHING_UP, "request_id": request_id, "message": CATCHING_UP_MESSAGE}


def state_text(request_id: str, texts: Iterable[str]) -> str:
    """A `state` frame's JSON text: the request's frames, given as the JSON texts they were sent as, in order, inside
    one object (none is parsed or written again). The worker's copy, a live session's relay and its kept transcripts
    all build it here; the worker checks its size (worker/loop.py)."""
    return f'{{"type": "state", "request_id": {orjson.dumps(request_id).decode()}, "frames": [{", ".join(texts)}]}}'


class ProtocolError(Refusal):
    """A frame the socket refuses; `code` goes into the error frame."""


@dataclass(frozen=True)
class Limits:
    """Per-request caps the operator sets (settings.PLAYGROUND_*)."""

    max_source_chars: int
    max_tokens: int


@dataclass(frozen=True)
class DecodeRequest:
    """One checked `decode` frame."""

    model: str
    source: str
    params: dict[str, Any]  # keyword arguments of modelcore.decoding.DecodeParams
    pace_ms: int = 0  # the worker sends a token at most every pace_ms (0: full speed)
    step_mode: bool = False  # one token per `step` frame
    compare_cache: bool = False  # also time each step without the KV cache
    tag: str | None = None  # echoed in `start` and in a refusal, so a client can match its requests
    view: View = View()  # the attention the frames carry: a layer and head (or the mean) of each stack


def _integer(low: int, high: int) -> Any:
    def check(name: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ProtocolError("bad_params", f"{name} must be an integer from {low} to {high}")
        return value

    return check


def _boolean(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ProtocolError("bad_params", f"{name} must be true or false")
    return value


def _caps(limits: Limits) -> dict[str, int]:
    """The playground's upper bounds, tighter than the engine's (DecodeParams checks the rest)."""
    return {
        "max_len": limits.max_tokens,
        "min_len": limits.max_tokens,
        "beam_size": MAX_BEAMS,
        "n_best": MAX_BEAMS,
        "temperature": MAX_TEMPERATURE,
        "top_k": MAX_TOP_K,
        "seed": MAX_SEED,
        "top_alternatives": MAX_ALTERNATIVES,
    }


VIEW_KEYS = ("layer", "encoder_layer", "head")


def parse_view_fields(fields: dict[str, Any]) -> View:
    """`layer`, `encoder_layer` (from 0; leave out for the last) and `head` (from 0, or "mean") -> View."""
    index = _integer(0, MAX_VIEW_INDEX)
    layer = fields.get("layer")
    encoder_layer = fields.get("encoder_layer")
    head = fields.get("head", MEAN)
    return View(
        None if layer is None else index("layer", layer),
        None if encoder_layer is None else index("encoder_layer", encoder_layer),
        None if head == MEAN else index("head", head),
    )


def _view(name: str, value: Any) -> View:
    if not isinstance(value, dict) or not set(value) <= set(VIEW_KEYS):
        raise ProtocolError("bad_params", f"{name} must be an object with some of {', '.join(VIEW_KEYS)}")
    return parse_view_fields(value)


# Frame keys that shape the stream rather than the search.
_OPTION_CHECKS: dict[str, Any] = {
    "attention": _boolean,
    "view": _view,
    "pace_ms": _integer(0, MAX_PACE_MS),
    "step_mode": _boolean,
    "compare_cache": _boolean,
}


def parse_decode(frame: dict[str, Any], limits: Limits) -> DecodeRequest:
    """A `decode` frame -> DecodeRequest, or ProtocolError naming the first thing wrong."""
    model = frame.get("model")
    if not isinstance(model, str) or not model or len(model) > 80 or not is_text(model):
        raise ProtocolError("bad_params", "model must be the name of a model (see /models/)")
    source = frame.get("source")
    if not isinstance(source, str) or not is_text(source):
        raise ProtocolError("bad_params", "source must be a string of Unicode text")
    if len(source) > limits.max_source_chars:
        raise ProtocolError(
            "source_too_long", f"the source has {len(source)} characters; at most {limits.max_source_chars} are allowed"
        )
    source = source.strip()
    if not source:
        raise ProtocolError("empty_source", "the source is empty: type something to translate")
    tag = frame.get("tag")
    if tag is not None and not is_tag(tag):
        raise ProtocolError("bad_params", f"tag must be a string of at most {MAX_TAG_CHARS} characters")
    params: dict[str, Any] = {"strategy": "greedy"}
    options: dict[str, Any] = {"attention": False, "view": View(), "pace_ms": 0, "step_mode": False,
                               "compare_cache": False}
    for key, value in frame.items():
        if key in ("type", "model", "source", "tag"):
            continue
        if key in PARAM_KEYS:
            params[key] = value
        elif key in _OPTION_CHECKS:
            options[key] = _OPTION_CHECKS[key](key, value)
        else:
            known = ", ".join(sorted([*PARAM_KEYS, *_OPTION_CHECKS]))
            raise ProtocolError("bad_params", f"unknown field {str(key)[:40]!r} (known: {known})")
    params["capture_attention"] = options["attention"]
    _check_params(params, limits)
    return DecodeRequest(
        model=model, source=source, params=params, pace_ms=options["pace_ms"], step_mode=options["step_mode"],
        compare_cache=options["compare_cache"], tag=tag, view=options["view"],
    )


def _check_params(params: dict[str, Any], limits: Limits) -> None:
    """The engine's checks (DecodeParams), so a client hears at once what a worker would refuse; then the caps."""
    for name in FLOAT_KEYS:  # an integer too large for a float (401 digits) would overflow in the engine's check
        value = params.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and not -MAX_FLOAT_INT <= value <= MAX_FLOAT_INT:
            raise ProtocolError("bad_params", f"{name} must be a number; this one is out of range")
    try:
        DecodeParams.from_dict(params)
    except DecodeError as error:
        raise ProtocolError("bad_params", str(error)) from None
    except (OverflowError, TypeError, ValueError):  # whatever else a number out of any range does to the check
        raise ProtocolError("bad_params", "a search parameter is out of range or of the wrong kind") from None
    for name, cap in _caps(limits).items():
        if name not in params:
            continue
        if params[name] is None:  # the engine reads None as "the default"; a frame leaves the field out instead
            raise ProtocolError("bad_params", f"{name} must be a number (leave it out for the default)")
        if params[name] > cap:
            raise ProtocolError("bad_params", f"{name} may be at most {cap} here, got {_shown(params[name])}")


def _shown(value: Any) -> str:
    """A number as an error message shows it: a 400-digit integer is cut, not echoed whole."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}… ({len(text)} digits)"


def is_tag(value: object) -> bool:
    """A client's label for its request: short printable text, safe to echo back."""
    return isinstance(value, str) and len(value) <= MAX_TAG_CHARS and value.isprintable()


def parse_target(frame: dict[str, Any]) -> str | None:
    """The request a `cancel` or `step` frame names (None: every request of this socket)."""
    target = frame.get("request_id")
    if target is None:
        return None
    if not isinstance(target, str) or not target or len(target) > MAX_ID_CHARS or not is_text(target):
        raise ProtocolError("bad_params", "request_id must be the id a `start` frame gave")
    return target


def parse_view(frame: dict[str, Any]) -> tuple[str | None, View]:
    """A `view` frame -> the request it names (None: this socket's latest) and the view it asks for."""
    unknown = set(frame) - {"type", "request_id", *VIEW_KEYS}
    if unknown:
        raise ProtocolError("bad_params", f"unknown field {str(sorted(unknown)[0])[:40]!r} in a view frame")
    return parse_target(frame), parse_view_fields(frame)
