"""One attention row written out step by step: raw scores q·k, the division by sqrt(d_k), the softmax."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from modelcore.model import MultiHeadAttention


def _rounded(values: Tensor, digits: int = 5) -> list[float]:
    return [round(float(v), digits) for v in values.flatten()]


@torch.no_grad()
def attention_row(
    attn: MultiHeadAttention, query_in: Tensor, key_in: Tensor, *, head: int, query: int, key_mask: Tensor | None = None
) -> dict[str, Any]:
    """softmax(q K^T / sqrt(d_k)) for one query position and one head, each stage kept.

    query_in (T_q, d_model) and key_in (T_k, d_model) are what the sublayer reads (after the norm in Pre-LN);
    key_mask (T_k,) True = may attend.
    """
    d_k = attn.d_k
    cols = slice(head * d_k, (head + 1) * d_k)
    q = attn.q_proj(query_in)[query, cols]  # (d_k,)
    k = attn.k_proj(key_in)[:, cols]  # (T_k, d_k)
    scores = k @ q  # (T_k,)
    scaled = scores / math.sqrt(d_k)
    masked = scaled if key_mask is None else scaled.masked_fill(~key_mask, float("-inf"))
    weights = masked.softmax(dim=-1)
    return {
        "d_k": d_k,
        "sqrt_d_k": round(math.sqrt(d_k), 5),
        "scores": _rounded(scores),
        "scaled": _rounded(scaled),
        "masked": [None if not math.isfinite(v) else v for v in _rounded(masked)],
        "weights": _rounded(weights),
    }
