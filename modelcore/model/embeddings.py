"""Token embeddings scaled by sqrt(d_model) and sinusoidal positions (section 3.4, 3.5)."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class TokenEmbedding(nn.Module):
    """Looks up each id and multiplies by sqrt(d_model), as the paper does."""

    def __init__(self, vocab_size: int, d_model: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.scale = math.sqrt(d_model)

    @property
    def weight(self) -> nn.Parameter:
        return self.embedding.weight

    def forward(self, ids: Tensor) -> Tensor:
        return self.embedding(ids) * self.scale  # (B, T, d_model)


def sinusoid_table(max_len: int, d_model: int) -> Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(...): (max_len, d_model)."""
    position = torch.arange(max_len, dtype=torch.float32)[:, None]  # (L, 1)
    inv_freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(position * inv_freq)
    table[:, 1::2] = torch.cos(position * inv_freq[: d_model // 2])
    return table


class PositionalEncoding(nn.Module):
    """Adds the fixed sinusoid of each position, then dropout."""

    def __init__(self, d_model: int, max_len: int, dropout: float) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        # Not persistent: recomputed on load, so checkpoints stay small and max_len can grow.
        self.register_buffer("table", sinusoid_table(max_len, d_model), persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """x (B, T, d_model); offset is the first position's index (for step-by-step decoding)."""
        T = x.size(1)
        if offset + T > self.table.size(0):
            raise ValueError(f"sequence of {offset + T} positions is longer than max_len {self.table.size(0)}")
        return self.dropout(x + self.table[offset : offset + T])
