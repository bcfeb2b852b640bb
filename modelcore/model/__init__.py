"""The Transformer encoder-decoder, built from small modules named as in torch.nn."""

from __future__ import annotations

from modelcore.model.attention import MultiHeadAttention
from modelcore.model.encoder_decoder import Decoder, Encoder, EncoderDecoder
from modelcore.model.layers import DecoderLayer, EncoderLayer, PositionwiseFeedForward
from modelcore.model.norms import RMSNorm, build_norm

__all__ = [
    "Decoder",
    "DecoderLayer",
    "Encoder",
    "EncoderDecoder",
    "EncoderLayer",
    "MultiHeadAttention",
    "PositionwiseFeedForward",
    "RMSNorm",
    "build_norm",
]
