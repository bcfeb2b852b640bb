"""The one figure style of the app: fonts, a colour per concept, axis habits; figures.py and the scripts both use it."""
from __future__ import annotations

import re
from typing import Any

from django.utils.translation import gettext as _

FONT = 'system-ui, -apple-system, "Segoe UI", "Noto Sans", "PingFang SC", "Microsoft YaHei", sans-serif'

# One colour for each thing compared, on every chart (the live loss chart and the result under it alike).
COLORS = {
    "post": "#b42318", "pre": "#2f6fde", "residual": "#13795b", "no residual": "#b4540a",
    "warmup": "#2f6fde", "no warmup": "#b42318", "layernorm": "#2f6fde", "rmsnorm": "#7a3fc2",
    "loss": "#2f6fde", "valid_loss": "#b4540a", "lr": "#5b6475", "exact_match": "#13795b",
    "token_accuracy": "#7a3fc2", "bleu": "#b4540a", "chosen": "#2f6fde", "other": "#aab4c5",
    "recompute": "#b4540a",
}


def label_text(label: str) -> str:
    """An arm's label (modelcore names it in English) as the reader's language says it: the experiments pages' and
    the lesson's (the causal mask, the FFN widths)."""
    names = {"post": "Post-LN", "pre": "Pre-LN", "residual": _("with residuals"), "no residual": _("without residuals"),
             "warmup": _("with warmup"), "no warmup": _("without warmup"), "layernorm": "LayerNorm", "rmsnorm": "RMSNorm",
             "causal mask": _("causal mask"), "no mask": _("no mask")}
    width = re.fullmatch(r"d_ff = (\d+) × d_model", label)
    if width:
        return _("d_ff = %(w)s × d_model") % {"w": width[1]}
    return names.get(label, label)


# Attention weights (0..1) on every heatmap of them, the playground's and the lesson's: a large weight reads dark.
WEIGHT_SCALE = [[0, "#f7fbff"], [0.25, "#c6dbef"], [0.5, "#6baed6"], [0.75, "#2171b5"], [1, "#08306b"]]

# The rest, in order, for series no concept names.
COLORWAY = ["#2f6fde", "#b42318", "#13795b", "#b4540a", "#7a3fc2", "#0e7490", "#5b6475"]

# Plotly's layout template: every axis makes room for its labels (automargin), so titles never sit on ticks.
TEMPLATE: dict[str, Any] = {
    "layout": {
        "font": {"family": FONT, "size": 13, "color": "#1d2330"},
        "colorway": COLORWAY,
        "paper_bgcolor": "#fff", "plot_bgcolor": "#fff",
        "xaxis": {"automargin": True, "gridcolor": "#e9ebf0", "zeroline": False, "title": {"standoff": 8}},
        "yaxis": {"automargin": True, "gridcolor": "#e9ebf0", "zeroline": False, "title": {"standoff": 8}},
        "legend": {"orientation": "h", "y": -0.22, "yanchor": "top"},
        "hoverlabel": {"font": {"family": FONT}},
    }
}


def figure_style() -> dict[str, Any]:
    """What static/js/figure_style.js reads from the page."""
    return {"colors": COLORS, "colorway": COLORWAY, "template": TEMPLATE, "weight_scale": WEIGHT_SCALE}
