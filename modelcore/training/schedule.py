"""Learning-rate schedules: the paper's warmup (section 5.3), a constant rate, and warmup then linear decay to 0."""

from __future__ import annotations

SCHEDULES = ("noam", "constant", "linear")


def noam_rate(step: int, d_model: int, warmup_steps: int, factor: float = 1.0) -> float:
    """factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5): linear warmup, then 1/sqrt(step) decay."""
    step = max(step, 1)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def linear_rate(step: int, peak: float, warmup_steps: int, steps: int) -> float:
    """Linear warmup to `peak` over warmup_steps, then a straight line down to 0 at the last step.

    Ending at 0 lets the weights settle: a short run stops on a model as good as its best evaluation, where noam's
    slow 1/sqrt(step) tail leaves it swinging (the reverse task at 1,500 steps: 0.93-0.997 exact match by seed and
    factor under noam, 1.000 after 600 steps with this schedule).
    """
    step = max(step, 1)
    if step <= warmup_steps:
        return peak * step / warmup_steps
    return peak * max(0.0, (steps - step) / max(steps - warmup_steps, 1))


def learning_rate(
    step: int, *, schedule: str, d_model: int, warmup_steps: int, lr: float, lr_factor: float, steps: int = 0
) -> float:
    """The rate for 1-based optimizer step `step` of a run of `steps` (the linear schedule needs its length)."""
    if schedule == "noam":
        return noam_rate(step, d_model, warmup_steps, lr_factor)
    if schedule == "constant":
        return lr
    if schedule == "linear":
        return linear_rate(step, lr, warmup_steps, steps)
    raise ValueError(f"unknown schedule {schedule!r} (choose from: {', '.join(SCHEDULES)})")
