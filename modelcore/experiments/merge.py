"""A sweep's result judged over its seeds, and one result from several of the same comparison (no torch, no Django):
a sweep split across workers, or a class's sweep with the seeds its students added (webapp/classroom/steps/seeds.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from modelcore.experiments.verdict import verdict


def judged(seeds: list[int], steps: int, results: list[dict[str, Any]], *, complete: bool) -> dict[str, Any]:
    """A sweep's result: its arms and the verdict over the seeds every arm completed (a diverged seed has a final
    loss, but not one to rank by); none when an arm is missing (`complete` False: the run was stopped)."""
    kept = [i for i in range(len(seeds))
            if all(r["runs"][i]["status"] == "completed" for r in results)] if complete else []
    finals = {r["label"]: [r["final_losses"][i] for i in kept] for r in results}
    return {"seeds": seeds, "steps": steps, "arms": results,
            "verdict": verdict(finals).to_dict() if kept and len(finals) >= 2 else None}


def merge_sweeps(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One sweep's result from the results of its parts, each the same comparison over other seeds (a sweep split
    across workers): every arm's seeds in the parts' order, the verdict over all of them. Each seed's numbers are
    its lone run's in whichever part it trained (train_stacked), so the whole equals the sweep trained at once."""
    if not parts:
        raise ValueError("no parts to merge")
    first = parts[0]
    n_arms = min(len(part["arms"]) for part in parts)  # fewer in a part that was stopped
    arms = []
    for index, arm in enumerate(first["arms"][:n_arms]):
        mine = [part["arms"][index] for part in parts]
        if any(each["label"] != arm["label"] for each in mine):
            raise ValueError("the parts compare different arms")
        arms.append({**arm, "seeds": [s for each in mine for s in each["seeds"]],
                     "runs": [run for each in mine for run in each["runs"]],
                     "final_losses": [f for each in mine for f in each["final_losses"]],
                     "seconds": round(sum(each["seconds"] for each in mine), 2)})
    seeds = [s for part in parts for s in part["seeds"]]
    machines = list(dict.fromkeys(part["machine"] for part in parts if part.get("machine")))
    return {**{k: v for k, v in first.items() if k not in ("seeds", "arms", "verdict")},
            **judged(seeds, first["steps"], arms, complete=all(len(part["arms"]) == n_arms for part in parts)),
            **({"machine": " + ".join(machines)} if machines else {})}
