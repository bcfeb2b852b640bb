"""Training: batching, the paper's schedule, the loop with checkpoints, and evaluation.

The names below load on first use (modelcore._lazy): the settings (`TrainConfig`) and the schedule load no
torch, so the web process can check a job's settings; the loop and evaluation load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from modelcore._lazy import lazy_exports

if TYPE_CHECKING:
    from modelcore.training.config import StepInfo, TrainConfig, TrainResult
    from modelcore.training.evaluation import evaluate
    from modelcore.training.schedule import learning_rate, noam_rate
    from modelcore.training.trainer import train

_EXPORTS = {
    "StepInfo": "modelcore.training.config",
    "TrainConfig": "modelcore.training.config",
    "TrainResult": "modelcore.training.config",
    "evaluate": "modelcore.training.evaluation",
    "learning_rate": "modelcore.training.schedule",
    "noam_rate": "modelcore.training.schedule",
    "train": "modelcore.training.trainer",
}
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

__all__ = ["StepInfo", "TrainConfig", "TrainResult", "evaluate", "learning_rate", "noam_rate", "train"]
