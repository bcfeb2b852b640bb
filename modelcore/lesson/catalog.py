"""Every demonstration of the lesson pages by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modelcore.checkpoint import LoadedModel
from modelcore.lesson.demos import DemoError, decoder_demo, encoder_demo, norms_demo, residual_demo
from modelcore.lesson.scaling import cache_demo, cost_demo, recurrence_demo

Demo = Callable[[LoadedModel, dict[str, Any]], dict[str, Any]]
DEMOS: dict[str, Demo] = {"encoder": encoder_demo, "decoder": decoder_demo, "residual": residual_demo,
                          "norms": norms_demo, "recurrence": recurrence_demo, "cost": cost_demo, "cache": cache_demo}


def run_demo(kind: str, loaded: LoadedModel, params: dict[str, Any]) -> dict[str, Any]:
    """One demonstration by name; DemoError on a bad request (nothing half-computed comes back)."""
    if kind not in DEMOS:
        raise DemoError("unknown_demo", f"no demonstration {kind!r} (choose from: {', '.join(DEMOS)})")
    return {"kind": kind, **DEMOS[kind](loaded, params)}
