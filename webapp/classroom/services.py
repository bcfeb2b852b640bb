"""Sessions and seats: creating, joining, driving and ending a live session."""
from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import redis
import segno
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from webapp.accounts.roles import Role, has_role, roles_known
from webapp.classroom.codes import new_code, normalize_code
from webapp.classroom.errors import ClassroomError
from webapp.classroom.models import VIEWS, LiveSession, Participant, SessionState
from webapp.classroom.questions import questions_close
from webapp.ops.redis_client import quick_redis
from webapp.playground.attention import MEAN
from webapp.playground.protocol import ProtocolError, parse_view_fields
from webapp.playground.services import playground_models
from webapp.registry.models import TrainedModel, unknown_model_text

__all__ = ["ClassroomError"]

log = logging.getLogger(__name__)
TOUCH_EVERY_S = 60  # a session's last_active_at is written at most once a minute


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
    """A new live session with a fresh join code (ClassroomError when the model is not the instructor's to use, or
    `too_many_sessions` when the instructor already has CLASSROOM_LIVE_SESSIONS_PER_INSTRUCTOR live ones)."""
    if not model_allowed(instructor, model_name):
        raise ClassroomError("unknown_model", unknown_model_text(model_name))
    sessions_end_idle(LiveSession.objects.filter(instructor=instructor))  # an idle one frees its slot
    limit = settings.CLASSROOM_LIVE_SESSIONS_PER_INSTRUCTOR
    if LiveSession.objects.filter(instructor=instructor, ended_at__isnull=True).count() >= limit:
        raise ClassroomError("too_many_sessions", f"you have {limit} live sessions, the most one may have: end one first")
    for _ in range(20):
        try:
            with transaction.atomic():
                return LiveSession.objects.create(instructor=instructor, title=title.strip()[:120] or model_name,
                                                  model_name=model_name, code=new_code())
        except IntegrityError:  # the code was taken: one chance in billions, draw again
            continue
    raise ClassroomError("internal", "could not draw a free join code")


def session_by_code(code: str) -> LiveSession | None:
    """The session with this code; one idle past CLASSROOM_IDLE_HOURS is ended here, as it is read."""
    session = LiveSession.objects.select_related("instructor").filter(code=normalize_code(code)).first()
    if session is not None:
        session_end_if_idle(session)
    return session


# -- inactivity: a session nobody drove or joined for CLASSROOM_IDLE_HOURS ends ---------------------------


def idle_since() -> Any:
    return timezone.now() - timedelta(hours=settings.CLASSROOM_IDLE_HOURS)


def session_touch(session: LiveSession) -> None:
    """Note activity (the console opened or drove it, a student joined); one write a minute at most."""
    now = timezone.now()
    if session.last_active_at is None or now - session.last_active_at >= timedelta(seconds=TOUCH_EVERY_S):
        LiveSession.objects.filter(pk=session.pk, ended_at__isnull=True).update(last_active_at=now)
        session.last_active_at = now


def session_end_if_idle(session: LiveSession) -> bool:
    """End a live session without activity for CLASSROOM_IDLE_HOURS (its screens are told); True when it ended."""
    if not session.live or session.last_active_at >= idle_since():
        return False
    session_end(session=session, reason=LiveSession.ENDED_IDLE)
    from webapp.classroom.relay import event_message, session_group
    from webapp.realtime.feed import publish

    publish([(session_group(session.code), event_message({"type": "ended", "reason": session.end_reason}))])
    return True


def sessions_end_idle(sessions: Any = None) -> int:
    """End every idle live session (of a queryset, or all); `manage.py classroom_end_idle` runs it for all."""
    query = sessions if sessions is not None else LiveSession.objects.all()
    return sum(session_end_if_idle(s) for s in query.filter(ended_at__isnull=True, last_active_at__lt=idle_since()))


# -- join codes tried: a throttle on wrong codes per user and per client address ----------------------------


class JoinThrottled(ClassroomError):
    def __init__(self) -> None:
        super().__init__("too_many", "too many wrong join codes from you or your network: wait a minute")


def _join_keys(user_id: Any, address: str) -> list[str]:
    return [f"encdec:classroom:joins:user:{user_id}", f"encdec:classroom:joins:address:{address}"]


def _already_in(code: str, user_id: Any) -> bool:
    """This user sits in, or teaches, the session with this code: their requests for it are not guesses. Each attempt
    is counted while it is looked up, so without this a class fetching its pages together from one shared address
    (a lesson step: every screen at once) went past the address's limit and was refused its own session."""
    if user_id is None:
        return False
    seated = Participant.objects.filter(user_id=user_id).values("session_id")
    return LiveSession.objects.filter(Q(instructor_id=user_id) | Q(pk__in=seated), code=normalize_code(code)).exists()


def session_by_code_throttled(code: str, *, user_id: Any, address: str) -> LiveSession | None:
    """session_by_code for a code someone typed or followed: each user and each client address may try
    CLASSROOM_JOIN_FAILURES_PER_USER / _PER_ADDRESS wrong codes per CLASSROOM_JOIN_WINDOW_S; past the user's, every
    attempt of theirs is refused (JoinThrottled) until the window ends, past the address's every wrong one (a right
    code still opens its session). A right code costs nothing: each attempt is counted first (so attempts at once
    cannot all slip under the limit) and given back when the code is found."""
    if _already_in(code, user_id):  # not a guess: their own class (a class at once behind one address, too)
        return session_by_code(code)
    keys = _join_keys(user_id, address)
    limits = [settings.CLASSROOM_JOIN_FAILURES_PER_USER, settings.CLASSROOM_JOIN_FAILURES_PER_ADDRESS]
    try:
        client = _throttle_redis()
        pipe = client.pipeline(transaction=True)
        for key in keys:
            pipe.set(key, 0, ex=settings.CLASSROOM_JOIN_WINDOW_S, nx=True)
            pipe.incr(key)
        counts = pipe.execute()[1::2]
    except redis.RedisError:  # the throttle is down, not joining
        log.warning("join throttle unavailable", exc_info=True)
        return session_by_code(code)
    over_user, over_address = (int(n) > limit for n, limit in zip(counts, limits, strict=True))
    # A user past their own limit is refused whatever they type; past the address's only (a class behind a school's
    # one address, where one student guessed on several accounts), a right code still goes through.
    session = None if over_user else session_by_code(code)
    if over_user or over_address or session is not None:  # a refused attempt or a right code: not a wrong guess
        _give_back(client, keys)
    if over_user or (over_address and session is None):
        raise JoinThrottled()
    return session


def _give_back(client: Any, keys: list[str]) -> None:
    try:
        pipe = client.pipeline(transaction=True)
        for key in keys:
            pipe.decr(key)
        pipe.execute()
    except redis.RedisError:
        log.warning("join throttle unavailable", exc_info=True)


def _throttle_redis() -> Any:
    return quick_redis()


def session_for_socket(code: str, user_id: Any, scope: dict[str, Any]) -> LiveSession | None:
    """The classroom socket's session by its code, throttled as the join page is (JoinThrottled)."""
    from webapp.accounts.lockout import scope_ip

    return session_by_code_throttled(code, user_id=user_id, address=scope_ip(scope))


def socket_join(code: str, user: Any, scope: dict[str, Any],
                roles: dict[Any, Any]) -> tuple[LiveSession, bool, bool] | None:
    """A classroom socket's join in one go (one thread hop for a class that joins at once): its live session by code,
    throttled as the join page is (JoinThrottled), whether the user drives it, and their seat (the instructor takes
    none); None when no live session has the code. `roles`: what the socket's handshake read of the user's role."""
    with roles_known(roles):
        # One query for a student who sits in the session already (a class coming back at once): their own class,
        # not a guess, and their seat.
        seat = (Participant.objects.select_related("session__instructor")
                .filter(user_id=user.pk, session__code=normalize_code(code)).first())
        if seat is None:
            session = session_for_socket(code, user.pk, scope)
        else:
            session = seat.session
            session_end_if_idle(session)
        if session is None or not session.live:
            return None
        if can_drive(user, session):
            return session, True, False
        if seat is None:
            return session, False, session_join(user=user, session=session) is not None
        session_touch(session)
        return session, False, True


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
    session_touch(session)
    if user.pk == session.instructor_id:
        return None
    participant, _ = Participant.objects.get_or_create(session=session, user=user)
    return participant


def session_end(*, session: LiveSession, reason: str = LiveSession.ENDED_BY_INSTRUCTOR) -> LiveSession:
    if session.ended_at is None:
        session.ended_at = timezone.now()
        session.end_reason = reason
        session.save(update_fields=["ended_at", "end_reason"])
        Participant.objects.filter(session=session).update(present=False)
        questions_close(session=session)
    return session


def sessions_for(user: Any) -> dict[str, list[LiveSession]]:
    """What /classroom/ lists: the sessions a user leads (live, past) and the ones they sat in."""
    sessions_end_idle(LiveSession.objects.filter(instructor=user))
    led = list(LiveSession.objects.filter(instructor=user))
    joined = list(LiveSession.objects.filter(participants__user=user).select_related("instructor"))
    return {"live": [s for s in led if s.live], "past": [s for s in led if not s.live], "joined": joined}


def session_state_update(*, session: LiveSession, **changes: Any) -> SessionState:
    """The one writer of a session's state: these fields changed (SessionState's), saved; returns the new state."""
    state = session.run_state.changed(**changes)
    session.state = state.to_json()
    fields = ["state"]
    if session.started_at is None and changes.get("request_id"):
        session.started_at = timezone.now()
        fields.append("started_at")
    session.last_active_at = timezone.now()  # the instructor drove it
    fields.append("last_active_at")
    session.save(update_fields=fields)
    return state


def parse_views(frame: dict[str, Any], n_layers: int | None) -> dict[str, Any]:
    """A console's `views` frame: which views the students see, and which layers and head the attention shows
    (read as the playground reads a decode's view, then held to the running model's decoder layers)."""
    views = frame.get("views")
    if not isinstance(views, list) or not all(isinstance(v, str) and v in VIEWS for v in views):
        raise ClassroomError("bad_params", f"views must be a list of: {', '.join(VIEWS)}")
    try:
        view = parse_view_fields(frame)
    except ProtocolError as error:
        raise ClassroomError(error.code, error.message) from error
    if view.layer is not None and n_layers is not None and view.layer >= n_layers:
        raise ClassroomError("bad_params", "layer must be a layer's index, from 0")
    return {"views": list(dict.fromkeys(views)), "layer": view.layer, "encoder_layer": view.encoder_layer,
            "head": MEAN if view.head is None else view.head}


def qr_svg(url: str) -> str:
    """The join link as an inline SVG QR code (segno), dark on white, sized by the page."""
    return segno.make(url, error="m").svg_inline(scale=8, border=2, dark="#111", light="#fff")


def session_model_fields(*, user: Any, name: str) -> dict[str, Any]:
    """The registry entry a session decodes with, as a playground job carries it (the instructor may use it)."""
    model = next((m for m in session_models(user) if m.name == name), None)
    if model is None:
        raise ClassroomError("unknown_model", unknown_model_text(name))
    return model.job_fields()
