"""A part's demonstration run once for the whole class (the console's `demo`).

One request on the `demonstrations` queue, made in the instructor's name (their limits, the lesson's cache); its
result is kept in the session's state, and every screen draws it from there (GET /classroom/<code>/demo/), so the
worker does what one student's Run costs whatever the class's size.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from webapp.classroom import services
from webapp.classroom.errors import ClassroomError
from webapp.classroom.models import LiveSession
from webapp.lesson.services import DEFAULT_MODEL, DEMO_KINDS, DemoRefused, demo_params, demo_run

FIELDS = ("sentence", "partner", "layer", "head", "query", "norm")  # what a demonstration reads, as its form sends


@dataclass(frozen=True)
class DemoAsked:
    """A checked `demo` step: its kind, model, fields as the lesson's form sends them, and their parsed values."""

    kind: str
    model: str
    raw: dict[str, str]
    params: dict[str, Any]


def demo_checked(fields: dict[str, Any]) -> DemoAsked:
    """A `demo` step's fields -> what it asks; ClassroomError naming what is wrong (an unknown field, a value that is
    not text or a whole number, a sentence too long, an unknown kind)."""
    kind = fields.get("kind")
    if kind not in DEMO_KINDS:
        raise ClassroomError("bad_params", f"no demonstration {kind!r:.40}: its kind is one of: {', '.join(DEMO_KINDS)}")
    unknown = sorted(set(fields) - {"kind", "model", *FIELDS})
    if unknown:
        raise ClassroomError("bad_params", f"unknown field {unknown[0][:40]!r}")
    model = fields.get("model") or DEFAULT_MODEL
    if not isinstance(model, str):
        raise ClassroomError("bad_params", "model must be a model's name")
    raw: dict[str, str] = {}
    for name in FIELDS:
        value = fields.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise ClassroomError("bad_params", f"{name} must be text or a whole number")
        raw[name] = str(value)
    try:
        params = demo_params(raw)
    except DemoRefused as refusal:
        raise ClassroomError(refusal.code, str(refusal)) from refusal
    return DemoAsked(kind=kind, model=model, raw=raw, params=params)


def demo_frame(session: LiveSession, demo: dict[str, Any] | None) -> dict[str, Any] | None:
    """The `demo` frame for the class's demonstration (its figures are read from `url`)."""
    if not demo:
        return None
    return {"type": "demo", "kind": demo["kind"], "model": demo["model"], "params": demo["params"],
            "cached": demo["cached"], "n": demo["n"], "url": reverse("classroom:demo", args=[session.code])}


def demo_for_class(*, session: LiveSession, user: Any, frame: dict[str, Any]) -> dict[str, Any]:
    """A console's `demo` frame: the demonstration computed (or read from the lesson's cache) in the instructor's
    name and kept as the session's; the refusal a student's Run would get (bad input, limits, busy) otherwise."""
    asked = demo_checked({k: v for k, v in frame.items() if k != "type"})
    try:
        answer = demo_run(user=user, kind=asked.kind, model_name=asked.model, raw=asked.raw)
    except DemoRefused as refusal:
        raise ClassroomError(refusal.code, str(refusal)) from refusal
    before = session.run_state.demo or {}
    demo = {"kind": asked.kind, "model": asked.model, "params": asked.params, "result": answer.result,
            "cached": answer.cached, "n": int(before.get("n", 0)) + 1}
    services.session_state_update(session=session, demo=demo, experiment_shown=None)
    return demo
