"""The lesson's demonstrations on the real models: what each page of /lesson/ computes and shows."""

from __future__ import annotations

from modelcore.lesson.catalog import DEMOS, run_demo
from modelcore.lesson.demos import DemoError
from modelcore.lesson.training import TRAININGS, run_training

__all__ = ["DEMOS", "TRAININGS", "DemoError", "run_demo", "run_training"]
