"""A model card's learning curve: its recipe on a quarter, a half and all of the HSK training sentences, the HSK
sentences alone, and the model with Tatoeba's pairs added, each scored on the same held-out sentences
(scripts/hsk_learning_curve.py writes the file)."""
from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

from django.utils.translation import gettext as _

from webapp.site_pages.figure_style import COLORS

CURVE_FILE = "learning_curve.json"  # in the model's folder; scripts/hsk_learning_curve.py writes it
CHRF_COLOR = COLORS["token_accuracy"]


def learning_curve_for(*, folder: Path) -> dict[str, Any] | None:
    """The figure, its rows and a reading for the model in `folder`, or None when it has no learning_curve.json."""
    path = folder / CURVE_FILE
    if not path.is_file():
        return None
    curve = json.loads(path.read_text(encoding="utf-8"))
    points, alone = curve["points"], curve["real_only"]
    # The HSK recipe's runs (up to all the HSK sentences), then any run with more real pairs than the HSK holds
    # (Tatoeba's added): the first are read as a curve, the others each in a sentence of their own.
    hsk = [p for p in points if p["real_pairs"] <= alone["real_pairs"]] or points
    more = [p for p in points if p not in hsk]
    first, last = hsk[0], hsk[-1]
    numbers = {"first": first["real_pairs"], "first_bleu": f"{first['bleu']:.2f}", "last": last["real_pairs"],
               "last_bleu": f"{last['bleu']:.2f}", "alone_bleu": f"{alone['bleu']:.2f}",
               "alone_grammar": f"{alone['grammar_bleu']:.1f}", "last_grammar": f"{last['grammar_bleu']:.1f}",
               "n": curve["test_sentences"]}
    bleus = [p["bleu"] for p in hsk]
    if all(a < b for a, b in pairwise(bleus)):
        trend = _("With %(first)s real training pairs this recipe scores BLEU %(first_bleu)s on the %(n)s held-out "
                  "real sentences; with all %(last)s, %(last_bleu)s: every doubling helps, and a few thousand pairs "
                  "are still far too few.") % numbers
    else:
        trend = _("With %(first)s real training pairs this recipe scores BLEU %(first_bleu)s on the %(n)s held-out "
                  "real sentences; with all %(last)s, %(last_bleu)s.") % numbers
    alone_text = _("The real sentences alone score BLEU %(alone_bleu)s on the same sentences, about the same (each "
                   "point is one training run, one seed), but only %(alone_grammar)s on the generated grammar's "
                   "sentences, which the recipe with them translates at %(last_grammar)s.") % numbers
    beyond = [_("With Tatoeba's everyday pairs added (%(real)s real pairs in all, and a longer run) it scores BLEU "
                "%(bleu)s and chrF %(chrf)s on the same sentences.") % {
                  "real": p["real_pairs"], "bleu": f"{p['bleu']:.2f}", "chrf": f"{p['chrf']:.1f}"} for p in more]
    reading = " ".join([trend, alone_text, *beyond])
    rows = [{"label": _("%(real)s real + %(generated)s generated") % {
                "real": p["real_pairs"], "generated": p["generated"]}, **p} for p in points]
    rows.append({"label": _("%(real)s real, nothing generated") % {"real": alone["real_pairs"]}, **alone})
    return {"figure": learning_curve_figure(curve), "reading": reading, "rows": rows}


def learning_curve_figure(curve: dict[str, Any]) -> dict[str, Any]:
    """BLEU and chrF against the number of real training pairs; the real-only run as separate markers."""
    points, alone = curve["points"], curve["real_only"]
    x = [p["real_pairs"] for p in points]
    with_generated = _("+ generated sentences")
    traces = [
        {"type": "scatter", "mode": "lines+markers", "x": x, "y": [p["bleu"] for p in points],
         "name": f"BLEU ({with_generated})", "line": {"color": COLORS["bleu"]}},
        {"type": "scatter", "mode": "lines+markers", "x": x, "y": [p["chrf"] for p in points],
         "name": f"chrF ({with_generated})", "line": {"color": CHRF_COLOR}},
        {"type": "scatter", "mode": "markers", "x": [alone["real_pairs"]], "y": [alone["bleu"]],
         "name": _("BLEU (real sentences alone)"), "marker": {"color": COLORS["bleu"], "symbol": "x", "size": 11}},
        {"type": "scatter", "mode": "markers", "x": [alone["real_pairs"]], "y": [alone["chrf"]],
         "name": _("chrF (real sentences alone)"), "marker": {"color": CHRF_COLOR, "symbol": "x", "size": 11}},
    ]
    layout = {
        "title": {"text": _("What more real sentences do")}, "height": 340,
        # From a thousand HSK pairs to sixty thousand with Tatoeba's: a log axis keeps the small runs apart.
        "xaxis": {"title": {"text": _("real training pairs")}, "tickvals": x,
                  "ticktext": [str(n) for n in x], "type": "log"},
        "yaxis": {"title": {"text": _("score on %(n)s held-out sentences (0–100)") % {"n": curve["test_sentences"]}},
                  "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.3},
    }
    parts = "; ".join(_("%(real)s real pairs: BLEU %(bleu)s, chrF %(chrf)s") % {
        "real": p["real_pairs"], "bleu": f"{p['bleu']:.2f}", "chrf": f"{p['chrf']:.1f}"} for p in points)
    alt = _("%(title)s. With generated sentences, %(parts)s. Real sentences alone: BLEU %(bleu)s, chrF %(chrf)s.") % {
        "title": layout["title"]["text"], "parts": parts, "bleu": f"{alone['bleu']:.2f}", "chrf": f"{alone['chrf']:.1f}"}
    return {"data": traces, "layout": layout, "alt": alt}
