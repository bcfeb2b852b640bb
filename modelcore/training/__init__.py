"""Training: batching, the paper's schedule, the loop with checkpoints, and evaluation."""

from __future__ import annotations

from modelcore.training.evaluate import evaluate
from modelcore.training.schedule import learning_rate, noam_rate
from modelcore.training.trainer import StepInfo, TrainConfig, TrainResult, train

__all__ = ["StepInfo", "TrainConfig", "TrainResult", "evaluate", "learning_rate", "noam_rate", "train"]
