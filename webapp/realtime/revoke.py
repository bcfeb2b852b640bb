"""Signals that end a user's socket rights: sign-out (that session); deactivation, role changes, a new password and
deletion (every session)."""
from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_out
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_save
from django.dispatch import receiver

from webapp.realtime.socket_guard import sockets_close

log = logging.getLogger(__name__)

User = get_user_model()
# The fields a role or access rests on (groups: below). A new password (changed, reset, or set by an admin) ends the
# other sign-ins (Django's session hash), so every socket closes as at sign-out; the session that changed it reconnects.
_RIGHTS = ("is_active", "is_staff", "is_superuser", "password")


def _close(**target: Any) -> None:
    try:
        sockets_close(**target)
    except Exception:  # Redis away: the per-action role checks still refuse what the user lost
        log.exception("could not close the sockets of %s", target)


@receiver(user_logged_out)
def _on_sign_out(sender: Any, request: Any = None, user: Any = None, **kwargs: Any) -> None:
    session = getattr(request, "session", None)
    if session is not None and session.session_key:
        _close(session_key=session.session_key, reason="signed_out")


@receiver(pre_save, sender=User)
def _remember_rights(sender: Any, instance: Any, update_fields: Any = None, **kwargs: Any) -> None:
    if update_fields is not None and not set(update_fields) & set(_RIGHTS):  # e.g. last_login at each sign-in
        return
    if instance.pk is not None:
        instance._rights_before = (  # compared after the save
            User.objects.filter(pk=instance.pk).values_list(*_RIGHTS).first()
        )


@receiver(post_save, sender=User)
def _on_user_saved(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
    before = getattr(instance, "_rights_before", None)
    if not created and before is not None and before != tuple(getattr(instance, f) for f in _RIGHTS):
        _close(user_id=instance.pk, reason="rights_changed")


@receiver(post_delete, sender=User)
def _on_user_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    _close(user_id=instance.pk, reason="deleted")  # the pk is still set here; Django clears it after the signal


@receiver(m2m_changed, sender=User.groups.through)
def _on_groups_changed(sender: Any, instance: Any, action: str, reverse: bool, pk_set: Any, **kwargs: Any) -> None:
    if action not in ("post_add", "post_remove", "post_clear"):
        return
    if not reverse:
        _close(user_id=instance.pk, reason="rights_changed")
    else:  # a group's members changed, from the group's side
        for user_id in pk_set or User.objects.none():
            _close(user_id=user_id, reason="rights_changed")
