"""Paired probe runs that differ in one switch only: same task, same batches, same seed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modelcore.experiments.runs import StepCallback, build_probe, probe_task, train_probe
from modelcore.experiments.spec import RunConfig, arms_of


def compare_runs(
    config: RunConfig,
    switch: str,
    *,
    on_step: Callable[[str, dict[str, Any]], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Train both arms one after the other; on_step(arm label, step info) reports progress of both."""
    arms = arms_of(config, switch)
    task = probe_task(config)  # built once: both arms see the very same pairs
    results = []
    for label, arm_config in arms:
        callback = _labelled(on_step, label) if on_step is not None else None
        run = train_probe(arm_config, probe=build_probe(arm_config, task), on_step=callback, should_stop=should_stop)
        results.append({"label": label, "run": run})
        if run["status"] == "stopped":
            break
    return {"switch": switch, "config": config.to_dict(), "arms": results}


def _labelled(on_step: Callable[[str, dict[str, Any]], None], label: str) -> StepCallback:
    """A per-run step callback that also says which arm is running."""
    return lambda info: on_step(label, info)
