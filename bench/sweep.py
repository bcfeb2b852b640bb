"""Seeds trained stacked against the same seeds trained alone, one after the other, for every comparison.

    .venv/bin/python bench/sweep.py [--seeds 16] [--steps 30] [--only NAME ...] [--stacked-threads 2]
        [--lone-threads 1] [--class-steps 300] [--json bench/results/sweep.json]

For each comparison (modelcore/experiments/comparisons.py) and each of its arms: the arm's S seeds trained as one
stacked model (modelcore.experiments.sweep.train_stacked), then the same S seeds each trained alone by the very code
the pages run today (the lesson's loop, modelcore.lesson.training._train_arm; the experiments' train_probe), one
after the other. Both include building each seed's task and model. The lone runs' validation (greedy decoding every
50 steps and at the end, per-layer gradient norms every 5 steps) is left out, so that they train and do nothing else
(the stacked run's one teacher-forced validation at the end stays in: it is what the sweep returns).
A comparison's speedup is the sum of its arms' lone times over the sum of its arms' stacked times; max_rel_diff is
the largest |stacked - lone| / |lone| over every seed's loss at every step of every arm (lone losses are kept to 5
decimals, as the pages keep them).

class_sweep_s: the class's sweep end to end, `sweep("mask", 8)` at the page's 300 steps (two arms, 8 seeds each),
with --stacked-threads threads.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import modelcore.experiments.runs as runs  # noqa: E402
import modelcore.lesson.training as lesson  # noqa: E402
from modelcore.experiments.comparisons import COMPARISONS, Arm, comparison_arms  # noqa: E402
from modelcore.experiments.sweep import sweep, train_stacked  # noqa: E402


def _lone(arm: Arm, seed: int) -> list[float]:
    config = arm.config.replace(seed=seed)
    if arm.loop == "lesson":
        return lesson._train_arm(config, arm.causal, lambda _step, _loss: None)["loss"]
    return runs.train_probe(config.replace(record_every=10**6))["loss"]


def _skip_validation() -> None:
    """The lone runs train only (their validation is no part of the comparison)."""
    runs._evaluate = lambda _probe, step: {"step": step}
    lesson._scores = lambda _model, _examples, _causal: {}
    lesson._generate = lambda _model, _src, _causal, _max_len: [[]]


def _max_rel_diff(stacked: dict, lone: list[list[float]]) -> float:
    worst = 0.0
    for run, curve in zip(stacked["runs"], lone, strict=True):
        if len(run["loss"]) != len(curve):
            return float("inf")
        for mine, theirs in zip(run["loss"], curve, strict=True):
            worst = max(worst, abs(mine - theirs) / abs(theirs))
    return worst


def bench_comparison(name: str, seeds: int, steps: int, stacked_threads: int, lone_threads: int) -> dict:
    arms = []
    for arm in comparison_arms(name):
        arm = Arm(arm.label, arm.config.replace(steps=steps), arm.causal, arm.loop)
        torch.set_num_threads(stacked_threads)
        started = time.perf_counter()
        stacked = train_stacked(arm, range(seeds))
        stacked_s = time.perf_counter() - started
        torch.set_num_threads(lone_threads)
        started = time.perf_counter()
        lone = [_lone(arm, seed) for seed in range(seeds)]
        lone_s = time.perf_counter() - started
        arms.append({"label": arm.label, "stacked_s": round(stacked_s, 2), "lone_s": round(lone_s, 2),
                     "speedup": round(lone_s / stacked_s, 2), "max_rel_diff": _max_rel_diff(stacked, lone)})
        print(f"  {name:<14}{arm.label:<22}stacked {stacked_s:7.1f} s   {seeds} lone {lone_s:7.1f} s   "
              f"x{lone_s / stacked_s:5.2f}   max rel diff {arms[-1]['max_rel_diff']:.1e}", flush=True)
    stacked_total = sum(a["stacked_s"] for a in arms)
    lone_total = sum(a["lone_s"] for a in arms)
    return {"seeds": seeds, "steps": steps, "speedup": round(lone_total / stacked_total, 2),
            "max_rel_diff": max(a["max_rel_diff"] for a in arms), "stacked_s": round(stacked_total, 2),
            "lone_s": round(lone_total, 2), "arms": arms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--only", nargs="+", choices=COMPARISONS, default=list(COMPARISONS))
    parser.add_argument("--stacked-threads", type=int, default=2)
    parser.add_argument("--lone-threads", type=int, default=1)
    parser.add_argument("--class-steps", type=int, default=300, help="0: leave the class sweep out")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    _skip_validation()
    # Warm up (the first Adam imports torch._dynamo, about a second): no side pays a one-off cost.
    warm = comparison_arms("mask")[0]
    warm = Arm(warm.label, warm.config.replace(steps=2), warm.causal, warm.loop)
    train_stacked(warm, range(2))
    _lone(warm, 0)
    started = time.perf_counter()
    print(f"{args.seeds} seeds, {args.steps} steps; stacked on {args.stacked_threads} threads, lone runs on "
          f"{args.lone_threads}; load average {os.getloadavg()[0]:.2f}", flush=True)
    comparisons = {name: bench_comparison(name, args.seeds, args.steps, args.stacked_threads, args.lone_threads)
                   for name in args.only}
    class_sweep_s = None
    if args.class_steps:
        torch.set_num_threads(args.stacked_threads)
        t0 = time.perf_counter()
        result = sweep("mask", 8, steps=args.class_steps)
        class_sweep_s = round(time.perf_counter() - t0, 1)
        print(f"class sweep: mask, 8 seeds x 2 arms, {args.class_steps} steps: {class_sweep_s} s; "
              f"verdict: {result['verdict']['text']}", flush=True)
    print(f"\n{'comparison':<16}{'seeds':>6}{'stacked s':>11}{'lone s':>9}{'speedup':>9}{'max rel diff':>14}")
    for name, row in comparisons.items():
        print(f"{name:<16}{row['seeds']:>6}{row['stacked_s']:>11.1f}{row['lone_s']:>9.1f}{row['speedup']:>9.2f}"
              f"{row['max_rel_diff']:>14.1e}")
    load = os.getloadavg()
    print(f"total {time.perf_counter() - started:.0f} s; load average now {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.json:
        args.json.write_text(json.dumps({
            "comparisons": comparisons, "class_sweep_s": class_sweep_s,
            "settings": {"seeds": args.seeds, "steps": args.steps, "stacked_threads": args.stacked_threads,
                         "lone_threads": args.lone_threads, "class_steps": args.class_steps},
            "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                        "avx512": "avx512f" in Path("/proc/cpuinfo").read_text(), "load_average": load,
                        "torch": torch.__version__},
        }, indent=1) + "\n")


if __name__ == "__main__":
    main()
