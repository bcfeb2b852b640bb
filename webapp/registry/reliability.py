"""A model card's reliability diagram: how often outputs of each confidence were good, on held-out sentences,
and what the low-confidence warning means (scripts/confidence_calibration.py writes calibration.json)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.utils.translation import gettext as _

from modelcore.decoding.confidence import CALIBRATION_FILE
from webapp.site_pages.figure_style import COLORS


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f} %"


def _warned(report: dict[str, Any]) -> dict[str, Any]:
    """How many bad and good outputs the warning came on, counted and to a tenth of a percent: a share rounded to
    the goal's 80 % must not read as the goal reached."""
    def share(value: float | None) -> str:
        return "—" if value is None else f"{100 * value:.1f} %"

    return {"bad": report["bad"], "good_n": report["good"],
            "bad_warned": "—" if report["bad_warned"] is None else round(report["bad_warned"] * report["bad"]),
            "good_warned": "—" if report["good_warned"] is None else round(report["good_warned"] * report["good"]),
            "bad_share": share(report["bad_warned"]), "good_share": share(report["good_warned"])}


def reliability_for(*, folder: Path, checkpoint_hash: str) -> dict[str, Any] | None:
    """The figure, the figures and a reading for the model in `folder`; None when it has no calibration.json."""
    path = folder / CALIBRATION_FILE
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    test, calibration = data["test"], data["calibration"]
    numbers = {"threshold": _percent(calibration["threshold"]), "n": test["sentences"], "good": test["good"],
               "cut": f"{data['good']['at_least']:.0f}", "auc": "—" if test["auc"] is None else f"{test['auc']:.2f}",
               **_warned(test), "grammar_warned": _percent(data["grammar_test"]["good_warned"])}
    meaning = _("The decoder warns “low confidence” when an output's confidence is below %(threshold)s. A warning "
                "means: do not trust this translation. No warning does not mean it is right.") % numbers
    measured = _("Measured on %(n)s held-out real sentences (%(good)s of them translated well: sentence chrF of at "
                 "least %(cut)s against the human translation): the confidence tells good outputs from bad ones with "
                 "an ROC AUC of %(auc)s, and the warning comes on %(bad_warned)s of the %(bad)s bad outputs "
                 "(%(bad_share)s) and %(good_warned)s of the %(good_n)s good ones (%(good_share)s; the goal: at least "
                 "80 %% and at most 25 %%). Of the generated grammar's held-out sentences, all translated well, "
                 "%(grammar_warned)s are warned.") % numbers
    if everyday := data.get("tatoeba_test"):
        measured += " " + _("On %(n)s everyday sentences from Tatoeba that the model never saw (%(good)s translated "
                            "well, each scored against every translation Tatoeba gives), the ROC AUC is %(auc)s and "
                            "the warning comes on %(bad_warned)s of the %(bad)s bad outputs (%(bad_share)s) and "
                            "%(good_warned)s of the %(good_n)s good ones (%(good_share)s).") % {
            "n": everyday["sentences"], "good": everyday["good"],
            "auc": "—" if everyday["auc"] is None else f"{everyday['auc']:.2f}", **_warned(everyday)}
    met = test["bad_warned"] is not None and test["good_warned"] is not None and \
        test["bad_warned"] >= 0.8 and test["good_warned"] <= 0.25
    verdict = _("The goal is met.") if met else _("The goal is not met: the model's own numbers do not separate its "
                                                  "good and bad outputs that well.")
    stale = calibration["checkpoint_hash"] != checkpoint_hash
    return {"figure": reliability_figure(data), "meaning": meaning, "measured": f"{measured} {verdict}",
            "stale": stale, "test": test, "threshold": calibration["threshold"]}


def reliability_figure(data: dict[str, Any]) -> dict[str, Any]:
    """Share of good outputs against the mean confidence of each bin, for the real and the grammar's sentences."""
    sets = [(data["test"], _("real held-out sentences"), COLORS["bleu"]),
            (data["grammar_test"], _("generated grammar's sentences"), COLORS["token_accuracy"])]
    if "tatoeba_test" in data:  # a model trained with the calibration's Tatoeba sentences kept out
        sets.append((data["tatoeba_test"], _("held-out everyday sentences (Tatoeba)"), COLORS["exact_match"]))
    traces: list[dict[str, Any]] = [
        {"type": "scatter", "mode": "lines", "x": [0, 1], "y": [0, 1], "name": _("as often good as it says"),
         "line": {"color": "#999", "dash": "dot"}, "hoverinfo": "skip"},
    ]
    for result, name, color in sets:
        bins = result["reliability"]
        traces.append({
            "type": "scatter", "mode": "lines+markers", "name": name, "line": {"color": color},
            "x": [b["mean_confidence"] for b in bins], "y": [b["good_share"] for b in bins],
            "marker": {"size": [min(24, 6 + b["n"] ** 0.5) for b in bins]},
            "text": [_("%(n)s sentences") % {"n": b["n"]} for b in bins],
            "hovertemplate": "%{text}: %{y:.0%} " + _("good") + "<extra></extra>",
        })
    threshold = data["calibration"]["threshold"]
    layout = {
        "title": {"text": _("Reliability: how often outputs of each confidence were good")}, "height": 360,
        "xaxis": {"title": {"text": _("confidence (mean of the bin)")}, "range": [0, 1], "tickformat": ".0%"},
        "yaxis": {"title": {"text": _("share of good outputs")}, "range": [0, 1.05], "tickformat": ".0%"},
        "shapes": [{"type": "line", "x0": threshold, "x1": threshold, "y0": 0, "y1": 1, "yref": "paper",
                    "line": {"color": COLORS["bleu"], "dash": "dash", "width": 1}}],
        "annotations": [{"x": threshold, "y": 1, "yref": "paper", "text": _("warning below"), "showarrow": False,
                         "xanchor": "left", "yanchor": "top"}],
        "legend": {"orientation": "h", "y": -0.3},
    }
    parts = "; ".join(_("confidence %(c)s: %(g)s good of %(n)s") % {
        "c": _percent(b["mean_confidence"]), "g": _percent(b["good_share"]), "n": b["n"]}
        for b in data["test"]["reliability"])
    alt = _("%(title)s. Real held-out sentences, by bin: %(parts)s. Warning below %(t)s.") % {
        "title": layout["title"]["text"], "parts": parts, "t": _percent(threshold)}
    return {"data": traces, "layout": layout, "alt": alt}
