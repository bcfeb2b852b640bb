"""Experiment runs small enough for tests, and stored rows to find."""
from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def launch_data() -> dict[str, Any]:
    """A valid launch form for a student: a small comparison."""
    return {"experiment": "compare", "switch": "norm_position", "task": "reverse", "layers": 2, "d_model": 32,
            "steps": 20, "batch_size": 8, "lr": 0.003, "warmup_steps": 0, "norm_position": "post",
            "norm": "layernorm", "residual": "on", "seeds": 1, "seed": 0}

