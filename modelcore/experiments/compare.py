"""Paired probe runs that differ in one switch only: same task, same batches, same seed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modelcore.experiments.runs import RunConfig, StepCallback, build_probe, probe_task, train_probe

# switch -> the two arms: (label, the RunConfig fields that arm sets)
SWITCHES: dict[str, Callable[[RunConfig], tuple[tuple[str, dict[str, Any]], ...]]] = {
    "norm_position": lambda c: (("post", {"norm_position": "post"}), ("pre", {"norm_position": "pre"})),
    "residual": lambda c: (("residual", {"residual": True}), ("no residual", {"residual": False})),
    # The warmup arm keeps the run's warmup_steps, or a fifth of the run when it has none.
    "warmup": lambda c: (
        ("warmup", {"warmup_steps": c.warmup_steps or max(1, c.steps // 5)}),
        ("no warmup", {"warmup_steps": 0}),
    ),
    "norm": lambda c: (("layernorm", {"norm": "layernorm"}), ("rmsnorm", {"norm": "rmsnorm"})),
}


def arms_of(config: RunConfig, switch: str) -> list[tuple[str, RunConfig]]:
    """The two configurations of a comparison, labelled."""
    if switch not in SWITCHES:
        raise ValueError(f"unknown switch {switch!r} (choose from: {', '.join(SWITCHES)})")
    return [(label, config.replace(**fields)) for label, fields in SWITCHES[switch](config)]


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
