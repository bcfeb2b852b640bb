"""{{ figures|readable_metrics }}: a model's or a checkpoint's figures with readable names (webapp/site_pages/metrics.py)."""
from __future__ import annotations

from django import template

from webapp.site_pages.metrics import readable_metrics as _readable_metrics

register = template.Library()


@register.filter
def readable_metrics(figures: dict[str, float]) -> list[tuple[str, str]]:
    """(name, value) pairs in the reader's language."""
    return _readable_metrics(figures)
