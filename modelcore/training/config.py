"""A training run's settings and what it reports, without torch: the web process checks a job's settings with these."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modelcore.config import PRESETS, ModelConfig
from modelcore.training.schedule import SCHEDULES


@dataclass
class TrainConfig:
    """One training run: the model preset and overrides, the optimiser, the schedule, the bookkeeping."""

    preset: str = "small"
    model: dict[str, Any] = field(default_factory=dict)  # ModelConfig fields that override the preset
    steps: int = 2000
    batch_size: int = 64  # sentence pairs per step
    # Similar lengths in a batch waste less on padding; off, each batch mixes lengths (steadier gradients).
    length_bucketing: bool = True
    schedule: str = "noam"
    warmup_steps: int = 400  # the paper's 4000 is for 100k steps; toy runs are ~20x shorter
    lr_factor: float = 1.0  # noam: the paper's formula times this
    lr: float = 1e-3  # the constant schedule's rate; the linear schedule's peak
    betas: tuple[float, float] = (0.9, 0.98)  # the paper's, section 5.3
    eps: float = 1e-9
    label_smoothing: float = 0.1
    clip_grad_norm: float = 1.0  # 0 turns clipping off
    eval_every: int = 500  # 0: only at the end
    eval_size: int = 500  # validation pairs per periodic evaluation (the end uses all of them)
    checkpoint_every: int = 500  # 0: only at the end (and when stopped)
    log_every: int = 10  # training-loss points kept in metrics.json
    seed: int = 0
    device: str | None = None  # "auto" | "cpu" | "cuda"; None: $MODELCORE_DEVICE, else "auto"

    def __post_init__(self) -> None:
        self.betas = tuple(self.betas)  # JSON gives a list back
        if self.preset not in PRESETS:
            raise ValueError(f"unknown preset {self.preset!r} (choose from: {', '.join(PRESETS)})")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {self.schedule!r} (choose from: {', '.join(SCHEDULES)})")
        for name in ("steps", "batch_size", "warmup_steps", "eval_size", "log_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("eval_every", "checkpoint_every", "seed"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, got {getattr(self, name)}")
        for name in ("lr", "lr_factor", "eps"):
            if not getattr(self, name) > 0 or not math.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be a positive number, got {getattr(self, name)}")
        if not 0 <= self.label_smoothing < 1 or not self.clip_grad_norm >= 0:
            raise ValueError("label_smoothing must be in [0, 1) and clip_grad_norm >= 0")
        ModelConfig.check(self.preset, **self.model)  # a bad size fails here, not after the data is built

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class StepInfo:
    """What the per-step callback sees (progress bars, live curves)."""

    step: int
    steps: int
    loss: float
    lr: float
    grad_norm: float
    tokens_per_s: float
    elapsed_s: float
    epoch: int
    eval: dict[str, Any] | None = None  # set on the steps that evaluated


@dataclass
class TrainResult:
    """Where the model went and how the run ended."""

    out_dir: Path
    step: int
    stopped: bool
    metrics: dict[str, Any]
