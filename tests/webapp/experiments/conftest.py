"""Experiment runs small enough for tests, and stored rows to find."""
from __future__ import annotations

from typing import Any

import pytest

# A 2+2-layer, d_model 32 comparison of 6 steps: a second or two on one CPU thread.
TINY_COMPARE: dict[str, Any] = {"layers": 2, "d_model": 32, "d_ff": 64, "n_train": 100, "steps": 6, "batch_size": 8,
                                "eval_every": 3, "eval_size": 8, "switch": "norm_position"}


@pytest.fixture
def launch_data() -> dict[str, Any]:
    """A valid launch form for a student: a small comparison."""
    return {"experiment": "compare", "switch": "norm_position", "task": "reverse", "layers": 2, "d_model": 32,
            "steps": 20, "batch_size": 8, "lr": 0.003, "warmup_steps": 0, "norm_position": "post",
            "norm": "layernorm", "residual": "on", "seeds": 1, "seed": 0}

