"""Learning-rate schedules: the paper's warmup (section 5.3) and a constant rate."""

from __future__ import annotations

SCHEDULES = ("noam", "constant")


def noam_rate(step: int, d_model: int, warmup_steps: int, factor: float = 1.0) -> float:
    """factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5): linear warmup, then 1/sqrt(step) decay."""
    step = max(step, 1)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def learning_rate(
    step: int, *, schedule: str, d_model: int, warmup_steps: int, lr: float, lr_factor: float
) -> float:
    """The rate for 1-based optimizer step `step`."""
    if schedule == "noam":
        return noam_rate(step, d_model, warmup_steps, lr_factor)
    if schedule == "constant":
        return lr
    raise ValueError(f"unknown schedule {schedule!r} (choose from: {', '.join(SCHEDULES)})")
