"""A model card's alignment figure: each cross-attention head against the HSK glosses, from the model's alignment.json.

scripts/alignment_figures.py writes the file from the model (modelcore.experiments.alignment); this module only
draws it: a heatmap of hit rates (decoder layers × heads, and the heads' mean), its caption and what it shows.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.utils.translation import gettext as _

from webapp.registry.cards import ALIGNMENT_CAVEAT, ALIGNMENT_MEASURE, ALIGNMENT_TITLE

ALIGNMENT_FILE = "alignment.json"  # modelcore.experiments.alignment.ALIGNMENT_FILE, without importing torch here
BELOW, CHANCE, ABOVE = "#b42318", "#f4f5f8", "#2f6fde"  # red under chance, pale at chance, blue above


def alignment_for(*, folder: Path) -> dict[str, Any] | None:
    """The figure and its text for the model in `folder`, or None when it has no alignment.json."""
    path = folder / ALIGNMENT_FILE
    if not path.is_file():
        return None
    figures = json.loads(path.read_text(encoding="utf-8"))
    chance = 100 * figures["chance"]
    return {
        "figure": alignment_figure(figures),
        "caption": _("Each cell: the share of the %(counted)s counted English words, on %(sentences)s held-out "
                     "sentences, whose strongest source character lies in the glossed word. Chance (a character "
                     "picked at random): %(chance)s%%; blue above it, red below.") % {
            "counted": figures["counted_words"], "sentences": figures["sentences"], "chance": f"{chance:.1f}"},
        "reading": [str(ALIGNMENT_MEASURE), alignment_reading(figures), str(ALIGNMENT_CAVEAT)],
    }


def _head(layer: int, head: int) -> str:
    return _("layer %(layer)s, head %(head)s") % {"layer": layer + 1, "head": head + 1}


def alignment_reading(figures: dict[str, Any]) -> str:
    """Which heads align above chance and which do not, and the best and weakest, from the figures themselves."""
    rates = [(rate, layer, head) for layer, heads in enumerate(figures["heads"]) for head, rate in enumerate(heads)]
    below = [_head(layer, head) for rate, layer, head in rates if rate <= figures["chance"]]
    best, worst = max(rates), min(rates)
    numbers = {"n": len(rates), "chance": f"{100 * figures['chance']:.0f}", "best": _head(best[1], best[2]),
               "best_rate": f"{100 * best[0]:.0f}", "worst": _head(worst[1], worst[2]),
               "worst_rate": f"{100 * worst[0]:.0f}"}
    if not below:
        return _("All %(n)s heads look at the glossed word more often than chance (%(chance)s%%): the best, "
                 "%(best)s, for %(best_rate)s%% of the words; the weakest, %(worst)s, for %(worst_rate)s%%.") % numbers
    return _("%(above)s of %(n)s heads look at the glossed word more often than chance (%(chance)s%%); at or "
             "below it: %(below)s. The best, %(best)s, does for %(best_rate)s%% of the words.") % {
        **numbers, "above": len(rates) - len(below), "below": " · ".join(below)}


def alignment_figure(figures: dict[str, Any]) -> dict[str, Any]:
    """Heatmap, one row per decoder layer: each head's hit rate in %, then the heads' mean; `alt` reads it out."""
    z = [[100 * rate for rate in heads] + [100 * mean]
         for heads, mean in zip(figures["heads"], figures["mean_over_heads"], strict=True)]
    columns = [str(head + 1) for head in range(len(figures["heads"][0]))] + [_("mean over heads")]
    layers = [str(layer + 1) for layer in range(len(z))]
    chance = figures["chance"]
    trace = {
        "type": "heatmap", "z": z, "x": columns, "y": layers, "zmin": 0, "zmax": 100,
        "colorscale": [[0, BELOW], [chance, CHANCE], [1, ABOVE]], "xgap": 2, "ygap": 2,
        "text": [[f"{value:.0f}%" for value in row] for row in z], "texttemplate": "%{text}",
        "customdata": [[_head(layer, head) for head in range(len(row) - 1)] + [
            _("layer %(layer)s, mean over heads") % {"layer": layer + 1}] for layer, row in enumerate(z)],
        "hovertemplate": "%{customdata}: %{z:.1f}%<extra></extra>",
        "colorbar": {"title": {"text": _("hit rate (%)")}},
    }
    layout = {
        "title": {"text": str(ALIGNMENT_TITLE)}, "margin": {"t": 50, "r": 20, "b": 60, "l": 70}, "height": 320,
        "xaxis": {"title": {"text": _("cross-attention head")}, "type": "category", "showgrid": False},
        "yaxis": {"title": {"text": _("decoder layer")}, "type": "category", "autorange": "reversed",
                  "showgrid": False},
    }
    rows = "; ".join(_("layer %(layer)s: %(rates)s") % {"layer": layer, "rates": ", ".join(text)}
                     for layer, text in zip(layers, trace["text"], strict=True))
    alt = _("%(title)s. Hit rate per head, then the mean over heads, %(rows)s. Chance: %(chance)s%%.") % {
        "title": ALIGNMENT_TITLE, "rows": rows, "chance": f"{100 * chance:.1f}"}
    return {"data": [trace], "layout": layout, "alt": alt}
