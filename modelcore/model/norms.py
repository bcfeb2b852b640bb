"""The two normalisations a layer can use: LayerNorm and RMSNorm.

Both normalise each position on its own, over its d_model features, at
training and at inference alike: there are no running statistics (those
belong to BatchNorm).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from modelcore.config import ModelConfig

EPS = 1e-5  # torch.nn.LayerNorm's default, used by both so that switching norm changes one thing only


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight (Zhang & Sennrich 2019): no centring, no bias."""

    def __init__(self, d_model: int, eps: float = EPS) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: Tensor) -> Tensor:
        rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (..., 1)
        return x * rms * self.weight


def build_norm(config: ModelConfig) -> nn.Module:
    """The norm the config asks for, over d_model features."""
    if config.norm == "rmsnorm":
        return RMSNorm(config.d_model)
    return nn.LayerNorm(config.d_model, eps=EPS)
