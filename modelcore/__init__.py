"""EncDec Lab's PyTorch core: the Transformer encoder-decoder, its training, checkpoints and CLI.

Never imports django, channels, celery or plotly: a worker or a notebook can use it alone. The
names below load on first use (modelcore._lazy), so `import modelcore.decoding.params` alone
loads no torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from modelcore._lazy import lazy_exports

if TYPE_CHECKING:
    from modelcore.checkpoint import CheckpointError, LoadedModel, load_model, save_model, shipped_models
    from modelcore.config import PRESETS, ModelConfig
    from modelcore.device import resolve_device
    from modelcore.generate import greedy_decode
    from modelcore.masks import causal_mask, make_src_mask, make_tgt_mask
    from modelcore.model import EncoderDecoder
    from modelcore.model.instrument import Recording, record
    from modelcore.training import StepInfo, TrainConfig, TrainResult, evaluate, train

_EXPORTS = {
    "CheckpointError": "modelcore.checkpoint",
    "LoadedModel": "modelcore.checkpoint",
    "load_model": "modelcore.checkpoint",
    "save_model": "modelcore.checkpoint",
    "shipped_models": "modelcore.checkpoint",
    "PRESETS": "modelcore.config",
    "ModelConfig": "modelcore.config",
    "resolve_device": "modelcore.device",
    "greedy_decode": "modelcore.generate",
    "causal_mask": "modelcore.masks",
    "make_src_mask": "modelcore.masks",
    "make_tgt_mask": "modelcore.masks",
    "EncoderDecoder": "modelcore.model",
    "Recording": "modelcore.model.instrument",
    "record": "modelcore.model.instrument",
    "StepInfo": "modelcore.training",
    "TrainConfig": "modelcore.training",
    "TrainResult": "modelcore.training",
    "evaluate": "modelcore.training",
    "train": "modelcore.training",
}
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

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
