"""{% training_badge %}: the count of the signed-in admin's queued and running jobs, kept live over /ws/notify/."""
from __future__ import annotations

from typing import Any

from django import template

from webapp.training.services import jobs_active_count

register = template.Library()


@register.inclusion_tag("training/partials/badge.html", takes_context=True)
def training_badge(context: template.Context) -> dict[str, Any]:
    user = context.get("user")
    return {"active": jobs_active_count(user) if user is not None and user.is_authenticated else 0}
