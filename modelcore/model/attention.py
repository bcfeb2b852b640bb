"""Multi-head scaled dot-product attention (Vaswani et al. 2017, section 3.2)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType

import torch.nn.functional as F
from torch import Tensor, nn

from modelcore.config import ModelConfig

Recorder = Callable[[Tensor], None]

# Who records attention weights in the current thread (or asyncio task): module -> its callbacks. A context
# variable, not an attribute of the module: a worker's threads share one warm model, and a recorder set on the
# module by one thread's demonstration would receive another thread's weights.
_NONE: Mapping[nn.Module, tuple[Recorder, ...]] = MappingProxyType({})
_RECORDERS: ContextVar[Mapping[nn.Module, tuple[Recorder, ...]]] = ContextVar("attention_recorders", default=_NONE)


@contextmanager
def recording_attention(recorders: Mapping[nn.Module, Recorder]) -> Iterator[None]:
    """While inside, and only for calls made from this thread or task, each module's weights go to its recorder."""
    outer = _RECORDERS.get()
    token = _RECORDERS.set({**outer, **{m: (*outer.get(m, ()), r) for m, r in recorders.items()}})
    try:
        yield
    finally:
        _RECORDERS.reset(token)


class MultiHeadAttention(nn.Module):
    """softmax(Q K^T / sqrt(d_k)) V in h heads, with torch.nn's projection names."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.d_k = config.d_k
        self.dropout = config.dropout
        self.q_proj = nn.Linear(config.d_model, config.d_model)
        self.k_proj = nn.Linear(config.d_model, config.d_model)
        self.v_proj = nn.Linear(config.d_model, config.d_model)
        self.out_proj = nn.Linear(config.d_model, config.d_model)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None) -> Tensor:
        """Attend from query (B, T_q, d_model) to key/value (B, T_k, d_model); mask True = may attend."""
        q = self._split_heads(self.q_proj(query))  # (B, h, T_q, d_k)
        k = self._split_heads(self.k_proj(key))  # (B, h, T_k, d_k)
        v = self._split_heads(self.v_proj(value))  # (B, h, T_k, d_k)
        dropout_p = self.dropout if self.training else 0.0
        recorders = _RECORDERS.get().get(self)  # set only while this call's caller records (recording_attention)
        if not recorders:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
        else:
            out = self._attend_and_record(q, k, v, mask, dropout_p, recorders)
        return self.out_proj(self._merge_heads(out))  # (B, T_q, d_model)

    def _attend_and_record(
        self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, dropout_p: float, recorders: tuple[Recorder, ...]
    ) -> Tensor:
        """The same attention written out, so that its weights can be kept."""
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, h, T_q, T_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = scores.softmax(dim=-1)  # masked keys get exactly 0
        for recorder in recorders:  # each receives the weights (B, h, T_q, T_k)
            recorder(weights.detach())
        return F.dropout(weights, dropout_p) @ v  # (B, h, T_q, d_k)

    def _split_heads(self, x: Tensor) -> Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_k).transpose(1, 2)  # (B, h, T, d_k)

    def _merge_heads(self, x: Tensor) -> Tensor:
        B, _, T, _ = x.shape
        return x.transpose(1, 2).reshape(B, T, self.n_heads * self.d_k)  # (B, T, d_model)
