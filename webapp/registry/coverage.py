"""A model card's source-word check: how many held-out outputs that lose a word the warnings catch, and how many
that keep every word they flag (scripts/coverage_figures.py writes coverage.json; docs/models.md gives the rule)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.utils.translation import gettext as _

from modelcore.decoding.coverage import COVERAGE_FILE

_SETS = (("tatoeba_test", "everyday"), ("hsk_test", "hsk"))


def coverage_for(*, folder: Path) -> dict[str, Any] | None:
    """The held-out figures of the model in `folder`, each with its counts, and the confidence thresholds fitted with
    the check (percent; None when not fitted); None when it has no coverage.json."""
    path = folder / COVERAGE_FILE
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    names = {"everyday": _("everyday sentences from Tatoeba it never saw"), "hsk": _("held-out HSK test sentences")}
    sets = []
    for key, kind in _SETS:
        if key not in data:
            continue
        fig = data[key]
        sets.append({"name": names[kind], "sentences": fig["sentences"], "lost": fig["lost"], "kept": fig["kept"],
                     **{which: {**fig[which], "catch_percent": round(100 * fig[which]["catch"]),
                                "flag_percent": round(100 * fig[which]["flag"])}
                        for which in ("combined", "check", "confidence")}})
    rule = data.get("rule") or {}
    thresholds = None
    if rule.get("confidence_all_covered") is not None and rule.get("confidence_some_missing") is not None:
        thresholds = {"all_covered": round(100 * rule["confidence_all_covered"]),
                      "some_missing": round(100 * rule["confidence_some_missing"])}
    return {"sets": sets, "example": data.get("lesson_example"), "thresholds": thresholds}


def lesson_example(name: str = "zh-en-hsk") -> dict[str, Any] | None:
    """The confident wrong output the lesson's decoder page shows, as scripts/coverage_figures.py computed it from the
    shipped model (source, output, confidence, threshold, missing words); None when the model has no coverage.json."""
    from modelcore.folder import SHIPPED_DIR

    path = SHIPPED_DIR / name / COVERAGE_FILE
    if not path.is_file():
        return None
    example = json.loads(path.read_text(encoding="utf-8")).get("lesson_example")
    if not example:
        return None
    return {**example, "confidence_percent": round(100 * example["confidence"]),
            "threshold_percent": round(100 * example["confidence_threshold"])}
