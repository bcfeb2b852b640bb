"""The model's decoder weights rearranged once for fast single-position steps.

Every Linear becomes (W^T, b) so that one torch.addmm computes it; the self-attention's
q/k/v projections are concatenated into one (d_model, 3 d_model) matrix and the
cross-attention's k/v into one (d_model, 2 d_model). The arrangement is rebuilt only when a
parameter changes (torch bumps a tensor's version on every in-place update).
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from modelcore.model import EncoderDecoder, RMSNorm

if TYPE_CHECKING:  # native/packed.py builds these from DecoderWeights: the runtime import goes that way only
    from modelcore.decoding.native.packed import NativeWeights


@dataclass
class LayerWeights:
    """One decoder layer, ready for x @ W + b."""

    w_qkv: Tensor  # (d_model, 3 d_model): self-attention q | k | v, the q part times 1/sqrt(d_k)
    b_qkv: Tensor
    w_self_out: Tensor  # (d_model, d_model)
    b_self_out: Tensor
    w_cross_q: Tensor  # (d_model, d_model), times 1/sqrt(d_k)
    b_cross_q: Tensor
    w_cross_kv: Tensor  # (d_model, 2 d_model): cross-attention k | v, applied to the memory once
    b_cross_kv: Tensor
    w_cross_out: Tensor
    b_cross_out: Tensor
    w_ff1: Tensor  # (d_model, d_ff)
    b_ff1: Tensor
    w_ff2: Tensor  # (d_ff, d_model)
    b_ff2: Tensor
    norm1: NormWeights
    norm2: NormWeights
    norm3: NormWeights


@dataclass
class DecoderWeights:
    """The whole decoder side: embedding, positions, layers, final norm and generator."""

    embedding: Tensor  # (V, d_model), already multiplied by sqrt(d_model)
    positions: Tensor  # (max_len, d_model) sinusoids
    layers: list[LayerWeights]
    final_norm: NormWeights | None  # Pre-LN only
    w_out: Tensor  # (d_model, V)
    b_out: Tensor
    n_heads: int
    d_k: int
    post: bool
    residual: bool
    native: NativeWeights | None = field(default=None, repr=False)  # packed once for the native step (native/packed.py)


_built: weakref.WeakKeyDictionary[EncoderDecoder, tuple[tuple[int, ...], DecoderWeights]] = (
    weakref.WeakKeyDictionary()
)


def decoder_weights(model: EncoderDecoder) -> DecoderWeights:
    """The model's decoder weights in fast-step form, built on first use and again after any change."""
    params = list(model.parameters())
    key = tuple(p._version for p in params) + tuple(p.data_ptr() for p in params)
    found = _built.get(model)
    if found is not None and found[0] == key:
        return found[1]
    with torch.no_grad():
        weights = _build(model)
    _built[model] = (key, weights)
    return weights


def _linear(*modules: nn.Linear, first_scale: float = 1.0) -> tuple[Tensor, Tensor]:
    """(W^T, b) of several Linears side by side: x @ W^T + b gives their outputs concatenated.

    first_scale multiplies the first module's outputs: attention folds its 1/sqrt(d_k) into
    the query projection here, once, instead of scaling the scores at every step.
    """
    weight = torch.cat([m.weight * first_scale if i == 0 else m.weight for i, m in enumerate(modules)])
    bias = torch.cat([m.bias * first_scale if i == 0 else m.bias for i, m in enumerate(modules)])
    return weight.t().contiguous(), bias.contiguous()  # (in, sum of out), (sum of out,)


@dataclass(frozen=True)
class NormWeights:
    """A LayerNorm or RMSNorm as one fused call on its own weights (and the same weights for the native step)."""

    rms: bool
    weight: Tensor
    bias: Tensor | None
    eps: float

    def __call__(self, x: Tensor) -> Tensor:
        shape = (self.weight.numel(),)
        if self.rms:
            return F.rms_norm(x, shape, self.weight, self.eps)
        return F.layer_norm(x, shape, self.weight, self.bias, self.eps)


def _norm(module: nn.Module) -> NormWeights:
    if isinstance(module, RMSNorm):
        return NormWeights(True, module.weight.detach(), None, module.eps)
    if isinstance(module, nn.LayerNorm):
        bias = module.bias.detach() if module.bias is not None else None
        return NormWeights(False, module.weight.detach(), bias, module.eps)
    raise TypeError(f"no fast path for norm {type(module).__name__}")


def _build(model: EncoderDecoder) -> DecoderWeights:
    config = model.config
    layers = []
    scale = 1.0 / math.sqrt(config.d_k)
    for layer in model.decoder.layers:
        sa, ca, ffn = layer.self_attn, layer.cross_attn, layer.ffn
        w_qkv, b_qkv = _linear(sa.q_proj, sa.k_proj, sa.v_proj, first_scale=scale)
        w_so, b_so = _linear(sa.out_proj)
        w_cq, b_cq = _linear(ca.q_proj, first_scale=scale)
        w_ckv, b_ckv = _linear(ca.k_proj, ca.v_proj)
        w_co, b_co = _linear(ca.out_proj)
        w_1, b_1 = _linear(ffn.linear1)
        w_2, b_2 = _linear(ffn.linear2)
        layers.append(
            LayerWeights(
                w_qkv, b_qkv, w_so, b_so, w_cq, b_cq, w_ckv, b_ckv, w_co, b_co, w_1, b_1, w_2, b_2,
                _norm(layer.norm1), _norm(layer.norm2), _norm(layer.norm3),
            )
        )
    final = model.decoder.norm
    w_out, b_out = _linear(model.generator)
    return DecoderWeights(
        embedding=(model.tgt_embed.weight * model.tgt_embed.scale).contiguous(),
        positions=model.positional.table,
        layers=layers,
        final_norm=None if isinstance(final, nn.Identity) else _norm(final),
        w_out=w_out,
        b_out=b_out,
        n_heads=config.n_heads,
        d_k=config.d_k,
        post=config.norm_position == "post",
        residual=config.residual,
    )
