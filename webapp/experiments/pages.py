"""Which results each experiment page shows, every comparison's sweep of seeds, and the shipped copies of them
(computed by experiments_defaults)."""
from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

DEFAULTS_DIR = Path(__file__).resolve().parent / "defaults"

# The probe run behind every default comparison: 6+6 layers, d_model 64, constant rate, no warmup.
# At lr 3e-3 Post-LN without warmup stays at the unigram guess on `reverse` (each token by its frequency in the
# targets: <eos> everywhere) while Pre-LN learns it (docs/experiments.md has the figures).
PROBE = {"task": "reverse", "layers": 6, "d_model": 64, "d_ff": 256, "steps": 300, "lr": 3e-3}
INIT = {"layers": 6, "d_model": 128, "d_ff": 512}  # the gradient measurements at initialisation
# The residual page switches the residual only, in the layout where it is a clean identity path.
SMALL_PRE = {"d_model": 64, "d_ff": 256, "norm_position": "pre"}
# Xiong et al.'s bounds vary the total depth L: the last layer's gradient at L = 6, 12, 24 in both layouts
# (the Pre-LN half has the residual page's parameters, so it is the same result).
DEPTHS = (6, 12, 24)

PAGES: dict[str, dict[str, tuple[str, dict[str, Any]]]] = {
    "norm-position": {
        "gradflow_post": ("gradflow", {**INIT, "norm_position": "post"}),
        "gradflow_pre": ("gradflow", {**INIT, "norm_position": "pre"}),
        "compare_norm_position": ("compare", {**PROBE, "switch": "norm_position"}),
        "compare_warmup": ("compare", {**PROBE, "switch": "warmup", "norm_position": "post"}),
        **{
            f"depth_{position}_{layers}": ("gradflow", {**SMALL_PRE, "norm_position": position, "layers": layers})
            for position in ("post", "pre")
            for layers in DEPTHS
        },
    },
    "residuals": {
        **{
            f"gradflow_{layers}_{'res' if residual else 'nores'}": (
                "gradflow", {**SMALL_PRE, "layers": layers, "residual": residual},
            )
            for layers in DEPTHS
            for residual in (True, False)
        },
        "drift": ("drift", {**SMALL_PRE, "layers": 6}),
        "compare_residual": ("compare", {**PROBE, "switch": "residual", "norm_position": "pre"}),
    },
    "layernorm": {
        "norms": ("norms", {"task": "zh-en", "layers": 3, "d_model": 64, "d_ff": 256, "steps": 200, "lr": 1e-3,
                            "warmup_steps": 50}),
    },
}


# Every training comparison as a sweep: each seed trained alone-equal, the verdict over them (modelcore's
# comparisons and verdict). SHIPPED_SEEDS seeds ship with the app (defaults/lesson-sweeps.json, defaults/sweeps.json),
# read instead of trained wherever a class predicts one (webapp/classroom/steps/comparisons.py).
SHIPPED_SEEDS = 16
# The lesson's comparisons' settings (modelcore.experiments.comparisons.LESSON_BASE, written out: no torch here).
LESSON = {"task": "copy", "n_train": 2000, "layers": 2, "d_model": 32, "n_heads": 2, "d_ff": 128,
          "norm_position": "pre", "steps": 300, "batch_size": 32, "lr": 3e-3, "eval_size": 100}
_SWEEP_BASES = {"mask": LESSON, "ffn": LESSON, "norm_position": PROBE, "warmup": {**PROBE, "norm_position": "post"},
                "residual": {**PROBE, "norm_position": "pre"}, "depth": {**PROBE, "norm_position": "pre"}}


def sweep_preset(comparison: str, seeds: int) -> dict[str, Any]:
    """The `sweep` run of a comparison (modelcore.experiments.comparisons.COMPARISONS) with this many seeds: the
    lesson's settings, or the probe of the experiments pages' comparison of the same switch."""
    return {**_SWEEP_BASES[comparison], "switch": comparison, "seeds": seeds}


PAGES["lesson-sweeps"] = {name: ("sweep", sweep_preset(name, SHIPPED_SEEDS)) for name in ("mask", "ffn")}
PAGES["sweeps"] = {name: ("sweep", sweep_preset(name, SHIPPED_SEEDS))
                   for name in ("norm_position", "warmup", "residual", "depth")}


def defaults_path(page: str) -> Path:
    return DEFAULTS_DIR / f"{page}.json"


@cache
def shipped_results() -> dict[str, dict[str, Any]]:
    """params_key -> shipped result, from every defaults/*.json (read once per process)."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(DEFAULTS_DIR.glob("*.json")):
        for entry in json.loads(path.read_text(encoding="utf-8")).values():
            found[entry["params_key"]] = entry["result"]
    return found
