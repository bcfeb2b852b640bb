"""A model's figures as a reader reads them: a name in their language and a value written for its kind."""
from __future__ import annotations

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

# In the order a reader compares models by; modelcore's evaluate() names them so (BLEU 0..100, the rest 0..1).
METRIC_NAMES: dict[str, Promise | str] = {
    "exact_match": _("exact match"),
    "token_accuracy": _("token accuracy (teacher-forced)"),
    "bleu": "BLEU",
    "chrf": "chrF",
    "loss": _("cross-entropy loss"),
    "n": _("pairs evaluated"),
}


def metric_name(key: str) -> str:
    """The figure's name in the reader's language (an unknown key as it is)."""
    return str(METRIC_NAMES.get(key, key))


def metric_value(key: str, value: float) -> str:
    """BLEU and chrF with one decimal (0..100), a count whole, fractions and losses with three."""
    if key == "n":
        return str(int(value))
    return f"{value:.1f}" if key in ("bleu", "chrf") else f"{value:.3f}"


def readable_metrics(figures: dict[str, float]) -> list[tuple[str, str]]:
    """(name, value) for each figure: the known ones in METRIC_NAMES's order, then any other."""
    keys = [k for k in METRIC_NAMES if k in figures] + [k for k in figures if k not in METRIC_NAMES]
    return [(metric_name(key), metric_value(key, figures[key])) for key in keys]
