"""EncDec Lab's PyTorch core: the Transformer encoder-decoder, its training, checkpoints and CLI.

Never imports django, channels, celery or plotly: a worker or a notebook can use it alone.
"""

from __future__ import annotations

from modelcore.config import PRESETS, ModelConfig
from modelcore.masks import causal_mask, make_src_mask, make_tgt_mask
from modelcore.model import EncoderDecoder
from modelcore.model.instrument import Recording, record

__all__ = [
    "PRESETS",
    "EncoderDecoder",
    "ModelConfig",
    "Recording",
    "causal_mask",
    "make_src_mask",
    "make_tgt_mask",
    "record",
]
