"""Sessions and seats: creating, joining, driving and ending a live session."""
from __future__ import annotations

from typing import Any

import segno
from django.db import IntegrityError, transaction
from django.utils import timezone

from webapp.accounts.roles import Role, has_role
from webapp.classroom.codes import new_code, normalize_code
from webapp.classroom.errors import ClassroomError
from webapp.classroom.models import VIEWS, LiveSession, Participant
from webapp.classroom.questions import questions_close
from webapp.playground.services import playground_models
from webapp.registry.models import TrainedModel

__all__ = ["ClassroomError"]


# -- sessions ------------------------------------------------------------------------------------


def session_models(user: Any) -> list[TrainedModel]:
    """The models an instructor may teach with: every published one, and the ones this instructor made."""
    visible = {m.name: m for m in playground_models(user)}
    for own in TrainedModel.objects.filter(created_by=user):
        visible.setdefault(own.name, own)
    return list(visible.values())


def model_allowed(user: Any, name: str) -> bool:
    return any(m.name == name for m in session_models(user))


def session_create(*, instructor: Any, title: str, model_name: str) -> LiveSession:
    """A new live session with a fresh join code (ClassroomError when the model is not the instructor's to use)."""
    if not model_allowed(instructor, model_name):
        raise ClassroomError("unknown_model", f"no model named {model_name[:80]!r} is available to you")
    for _ in range(20):
        try:
            with transaction.atomic():
                return LiveSession.objects.create(instructor=instructor, title=title.strip()[:120] or model_name,
                                                  model_name=model_name, code=new_code())
        except IntegrityError:  # the code was taken: one chance in billions, draw again
            continue
    raise ClassroomError("internal", "could not draw a free join code")


def session_by_code(code: str) -> LiveSession | None:
    return LiveSession.objects.select_related("instructor").filter(code=normalize_code(code)).first()


def can_drive(user: Any, session: LiveSession) -> bool:
    """The session's own instructor drives it while they hold the instructor role (a demotion ends it), and admins may."""
    if not user.is_authenticated:
        return False
    return has_role(user, Role.ADMIN) or (user.pk == session.instructor_id and has_role(user, Role.INSTRUCTOR))


def is_participant(user: Any, session: LiveSession) -> bool:
    return Participant.objects.filter(session=session, user=user).exists()


def session_join(*, user: Any, session: LiveSession) -> Participant | None:
    """Seat a user in a live session (the instructor takes no seat); ClassroomError once it ended."""
    if not session.live:
        raise ClassroomError("ended", "this session has ended")
    if user.pk == session.instructor_id:
        return None
    participant, _ = Participant.objects.get_or_create(session=session, user=user)
    return participant


def session_end(*, session: LiveSession) -> LiveSession:
    if session.ended is None:
        session.ended = timezone.now()
        session.save(update_fields=["ended"])
        Participant.objects.filter(session=session).update(present=False)
        questions_close(session=session)
    return session


def sessions_for(user: Any) -> dict[str, list[LiveSession]]:
    """What /classroom/ lists: the sessions a user leads (live, past) and the ones they sat in."""
    led = list(LiveSession.objects.filter(instructor=user))
    joined = list(LiveSession.objects.filter(participants__user=user).select_related("instructor"))
    return {"live": [s for s in led if s.live], "past": [s for s in led if not s.live], "joined": joined}


def session_state_update(*, session: LiveSession, **changes: Any) -> dict[str, Any]:
    """Merge changes into the session's state and save it; returns the new state."""
    state = dict(session.state)
    state.update(changes)
    session.state = state
    fields = ["state"]
    if session.started is None and changes.get("request_id"):
        session.started = timezone.now()
        fields.append("started")
    session.save(update_fields=fields)
    return state


def parse_views(frame: dict[str, Any], n_layers: int | None) -> dict[str, Any]:
    """A console's `views` frame: which views the students see, and which layers and head the attention shows."""
    views = frame.get("views")
    if not isinstance(views, list) or not all(isinstance(v, str) and v in VIEWS for v in views):
        raise ClassroomError("bad_params", f"views must be a list of: {', '.join(VIEWS)}")
    chosen: dict[str, Any] = {"views": list(dict.fromkeys(views))}
    for name in ("layer", "encoder_layer"):
        index = frame.get(name)
        if index is not None and (isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < 256
                                  or (name == "layer" and n_layers is not None and index >= n_layers)):
            raise ClassroomError("bad_params", f"{name} must be a layer's index, from 0")
        chosen[name] = index
    head = frame.get("head", "mean")
    if head != "mean" and (isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < 256):
        raise ClassroomError("bad_params", "head must be a head's index, from 0, or \"mean\"")
    chosen["head"] = head
    return chosen


def attention_view_of(state: dict[str, Any]) -> dict[str, Any]:
    """The session's layers and head as a decode's `view` (docs/protocol.md); absent: the last layers."""
    view = {name: state.get(name) for name in ("layer", "encoder_layer") if state.get(name) is not None}
    return {**view, "head": state.get("head", "mean")}


def qr_svg(url: str) -> str:
    """The join link as an inline SVG QR code (segno), dark on white, sized by the page."""
    return segno.make(url, error="m").svg_inline(scale=8, border=2, dark="#111", light="#fff")


def session_model_fields(*, user: Any, name: str) -> dict[str, Any]:
    """The registry entry a session decodes with, as a playground job carries it (the instructor may use it)."""
    model = next((m for m in session_models(user) if m.name == name), None)
    if model is None:
        raise ClassroomError("unknown_model", f"no model named {name[:80]!r} is available to you")
    return {"name": model.name, "path": str(model.folder), "hash": model.checkpoint_hash}
