"""Attention masks: which key positions each query may look at.

Convention used across modelcore: a boolean tensor, True = may attend, broadcast
against attention scores of shape (B, h, T_query, T_key), as
F.scaled_dot_product_attention takes it.
"""

from __future__ import annotations

import torch
from torch import Tensor

from modelcore.tokenization import PAD_ID


def make_src_mask(src: Tensor, pad_id: int = PAD_ID) -> Tensor:
    """Source padding mask (B, 1, 1, S): no query attends to a padded source position."""
    return (src != pad_id)[:, None, None, :]  # (B, 1, 1, S)


def causal_mask(size: int, device: torch.device | str | None = None) -> Tensor:
    """Lower-triangular (1, 1, T, T): position t sees positions <= t only."""
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()[None, None]


def make_tgt_mask(tgt: Tensor, pad_id: int = PAD_ID) -> Tensor:
    """Target mask (B, 1, T, T): causal and no padded key position."""
    T = tgt.size(1)
    padding = (tgt != pad_id)[:, None, None, :]  # (B, 1, 1, T)
    return padding & causal_mask(T, tgt.device)  # (B, 1, T, T)
