"""Which arm of a comparison ended lowest, said only as far as the seeds support it (no torch, no Django).

An arm is the answer when both hold:
- it ends with the lowest final loss in at least 90 % of the seeds (seed i of every arm compared together), and
- the gap between its mean and every other arm's mean exceeds twice that gap's standard error
  (sqrt(s_a^2/n_a + s_b^2/n_b), each s the sample standard deviation over seeds).
Otherwise the answer is "no reliable difference". One seed never supports an answer: it has no spread to judge by.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

NO_RELIABLE_DIFFERENCE = "no reliable difference"
MIN_SHARE = 0.9  # the answer ends lowest in at least this share of the seeds
MIN_GAP_SE = 2.0  # and its mean is lower than every other arm's by more than this many standard errors


@dataclass(frozen=True)
class ArmFigures:
    label: str
    n: int  # seeds
    mean: float
    sd: float  # sample standard deviation over the seeds (0 with one seed)
    se: float  # standard error of the mean: sd / sqrt(n)
    lowest: int  # seeds in which this arm ended lowest


@dataclass(frozen=True)
class Verdict:
    answer: str  # the arm's label, or NO_RELIABLE_DIFFERENCE
    reliable: bool
    leader: str  # the arm lowest in the most seeds (ties: the lower mean), whether or not it is the answer
    seeds: int
    arms: tuple[ArmFigures, ...]  # in the order given
    gap: float  # the smallest gap between the leader's mean and another arm's (>= 0 when the leader's is lowest)
    gap_se: float  # that gap's standard error
    reason: str  # why there is no answer ("" when there is one)
    text: str  # e.g. "lowest in 15 of 16 seeds, mean 0.80 ± 0.03 vs 2.99 ± 0.12" (± one standard error)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _number(value: float) -> str:
    """Two decimals, or two significant digits below 0.01 (a loss of 0.0031 is not 0.00)."""
    if value != 0 and abs(value) < 0.01:
        return f"{value:.2g}"
    return f"{value:.2f}"


def verdict(final_losses: Mapping[str, Sequence[float]]) -> Verdict:
    """The verdict over each arm's final losses, one per seed in the same seed order for every arm.

    ValueError when there are fewer than two arms, an arm has no seeds, the arms have different numbers of seeds,
    or a loss is not a finite number (a diverged seed has no final loss to compare: leave the comparison out).
    """
    if len(final_losses) < 2:
        raise ValueError("a verdict needs at least two arms")
    counts = {len(values) for values in final_losses.values()}
    if len(counts) != 1 or 0 in counts:
        raise ValueError("every arm needs the same number of seeds, at least one")
    if not all(math.isfinite(v) for values in final_losses.values() for v in values):
        raise ValueError("every final loss must be a finite number")
    labels = list(final_losses)
    n = counts.pop()
    lowest = dict.fromkeys(labels, 0)
    for i in range(n):
        column = [(final_losses[label][i], label) for label in labels]
        best = min(value for value, _ in column)
        winners = [label for value, label in column if value == best]
        if len(winners) == 1:  # a tie makes no arm lowest in that seed
            lowest[winners[0]] += 1
    arms = []
    for label in labels:
        values = [float(v) for v in final_losses[label]]
        sd = statistics.stdev(values) if n > 1 else 0.0
        arms.append(ArmFigures(label, n, statistics.fmean(values), sd, sd / math.sqrt(n), lowest[label]))
    leader = max(arms, key=lambda a: (a.lowest, -a.mean))
    others = [a for a in arms if a is not leader]
    gaps = [(other.mean - leader.mean, math.sqrt(leader.se ** 2 + other.se ** 2)) for other in others]
    gap, gap_se = min(gaps, key=lambda g: g[0] - MIN_GAP_SE * g[1])  # the closest call
    reasons = []
    if n < 2:
        reasons.append("one seed has no spread to judge by")
    if leader.lowest < MIN_SHARE * n:
        reasons.append(f"no arm ends lowest in {MIN_SHARE:.0%} of the seeds")
    if not all(g > MIN_GAP_SE * se for g, se in gaps):
        reasons.append("the gap of the means is within twice its standard error")
    reliable = not reasons
    figures = f"mean {_number(leader.mean)} ± {_number(leader.se)} vs " + ", ".join(
        f"{_number(o.mean)} ± {_number(o.se)}" for o in others)
    text = f"lowest in {leader.lowest} of {n} seeds, {figures}"
    if not reliable:
        text = f"{NO_RELIABLE_DIFFERENCE}: {leader.label} lowest in {leader.lowest} of {n} seeds, {figures}"
    return Verdict(answer=leader.label if reliable else NO_RELIABLE_DIFFERENCE, reliable=reliable,
                   leader=leader.label, seeds=n, arms=tuple(arms), gap=gap, gap_se=gap_se,
                   reason="; ".join(reasons), text=text)
