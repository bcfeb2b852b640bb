"""Tiny jobs (seconds on one CPU thread), a private model store, an empty `training` queue."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

# Small splits keep the final evaluation to a second; the task is the real one otherwise.
TINY_TASK_OPTIONS = {"n_train": 2000, "n_valid": 40, "n_test": 40}


def tiny_config(**overrides: Any) -> dict[str, Any]:
    """A job configuration for a 2+2-layer, d_model 32 model: 60 steps with a checkpoint every 10."""
    from modelcore.config import KNOBS, model_overrides
    from webapp.training.spec import train_config_dict

    fields: dict[str, Any] = dict(
        layers=2, d_model=32, n_heads=2, d_ff=64, norm_position="pre", norm="layernorm", residual=True,
        dropout=0.1, steps=60, batch_size=32, schedule="noam", warmup_steps=20, lr=1e-3, lr_factor=1.0, seed=0,
        checkpoint_every=10, eval_every=0,
    )
    fields.update(overrides)
    model = model_overrides(**{name: fields.pop(name) for name in KNOBS})
    return train_config_dict(model=model, **fields)


@pytest.fixture
def store(settings, tmp_path: Path) -> Path:
    """MODEL_STORE in this test's folder (worker processes get it through their environment)."""
    settings.MODEL_STORE = tmp_path / "store"
    settings.MODEL_STORE.mkdir()
    return settings.MODEL_STORE

