"""One encoder layer and one decoder layer, Post-LN and Pre-LN side by side.

The decoder layer is written three times; a change to one must be made in all three:
- here, the modules: `DecoderLayer`, what training and the full recompute run
  (tests/modelcore/model/test_layers.py checks it against torch.nn.TransformerDecoderLayer);
- the Python KV-cache step, `CachedStepper.step` in modelcore/decoding/steppers.py, over the
  weights modelcore/decoding/weights.py rearranges (tests/modelcore/decoding/test_generate.py:
  the same tokens and logits within 1e-5 as the full recompute, for every strategy, layout,
  norm and the residual ablation);
- the native step, `decoder_step` in modelcore/decoding/native/step.cpp (test_generate.py runs
  the same comparisons with the native step, and against the Python step on padded batches
  with beams, sampling and captured attention; test_batch.py with a request joining late).
docs/decoding.md ("Copies of the decoder layer") says the same.
"""

from __future__ import annotations

from torch import Tensor, nn

from modelcore.config import ModelConfig
from modelcore.model.attention import MultiHeadAttention
from modelcore.model.norms import build_norm


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W1 + b1) W2 + b2, applied to each position alone (section 3.3)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.linear1 = nn.Linear(config.d_model, config.d_ff)
        self.activation = nn.ReLU()  # a module, so instrumentation can count its zeros with a hook
        self.dropout = nn.Dropout(config.dropout)
        self.linear2 = nn.Linear(config.d_ff, config.d_model)

    def forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(self.activation(self.linear1(x))))  # (B, T, d_model)


class _Sublayers(nn.Module):
    """What both layers share: the residual switch and the sublayer blocks."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.residual = config.residual
        self.norm_position = config.norm_position
        self.self_attn = MultiHeadAttention(config)
        self.ffn = PositionwiseFeedForward(config)
        self.dropout = nn.Dropout(config.dropout)  # on each sublayer's output, before the residual sum

    def _skip(self, x: Tensor) -> Tensor | float:
        """The residual path: x itself, or nothing when the ablation turns residuals off."""
        return x if self.residual else 0.0

    def _self_attention_block(self, x: Tensor, mask: Tensor | None) -> Tensor:
        return self.dropout(self.self_attn(x, x, x, mask))

    def _ffn_block(self, x: Tensor) -> Tensor:
        return self.dropout(self.ffn(x))


class EncoderLayer(_Sublayers):
    """Self-attention then FFN, each wrapped in a residual and a norm."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.norm1 = build_norm(config)
        self.norm2 = build_norm(config)

    def forward(self, x: Tensor, src_mask: Tensor | None) -> Tensor:
        """x (B, S, d_model) -> (B, S, d_model)."""
        if self.norm_position == "post":  # x = LN(x + F(x))
            x = self.norm1(self._skip(x) + self._self_attention_block(x, src_mask))
            x = self.norm2(self._skip(x) + self._ffn_block(x))
        else:  # x = x + F(LN(x))
            x = self._skip(x) + self._self_attention_block(self.norm1(x), src_mask)
            x = self._skip(x) + self._ffn_block(self.norm2(x))
        return x


class DecoderLayer(_Sublayers):
    """Masked self-attention, cross-attention over the encoder's memory, then FFN."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.cross_attn = MultiHeadAttention(config)
        self.norm1 = build_norm(config)
        self.norm2 = build_norm(config)
        self.norm3 = build_norm(config)

    def forward(self, x: Tensor, memory: Tensor, src_mask: Tensor | None, tgt_mask: Tensor | None) -> Tensor:
        """x (B, T, d_model), memory (B, S, d_model) -> (B, T, d_model)."""
        if self.norm_position == "post":  # x = LN(x + F(x))
            x = self.norm1(self._skip(x) + self._self_attention_block(x, tgt_mask))
            x = self.norm2(self._skip(x) + self._cross_attention_block(x, memory, src_mask))
            x = self.norm3(self._skip(x) + self._ffn_block(x))
        else:  # x = x + F(LN(x))
            x = self._skip(x) + self._self_attention_block(self.norm1(x), tgt_mask)
            x = self._skip(x) + self._cross_attention_block(self.norm2(x), memory, src_mask)
            x = self._skip(x) + self._ffn_block(self.norm3(x))
        return x

    def _cross_attention_block(self, x: Tensor, memory: Tensor, src_mask: Tensor | None) -> Tensor:
        return self.dropout(self.cross_attn(x, memory, memory, src_mask))
