"""EncDec Lab's PyTorch core: the Transformer encoder-decoder, its training, checkpoints and CLI.

Never imports django, channels, celery or plotly: a worker or a notebook can use it alone.
"""

from __future__ import annotations

from modelcore.checkpoint import CheckpointError, LoadedModel, load_model, save_model, shipped_models
from modelcore.config import PRESETS, ModelConfig
from modelcore.device import resolve_device
from modelcore.generate import greedy_decode
from modelcore.masks import causal_mask, make_src_mask, make_tgt_mask
from modelcore.model import EncoderDecoder
from modelcore.model.instrument import Recording, record
from modelcore.training import StepInfo, TrainConfig, TrainResult, evaluate, train

__all__ = [
    "PRESETS",
    "CheckpointError",
    "EncoderDecoder",
    "LoadedModel",
    "ModelConfig",
    "Recording",
    "StepInfo",
    "TrainConfig",
    "TrainResult",
    "causal_mask",
    "evaluate",
    "greedy_decode",
    "load_model",
    "make_src_mask",
    "make_tgt_mask",
    "record",
    "resolve_device",
    "save_model",
    "shipped_models",
    "train",
]
