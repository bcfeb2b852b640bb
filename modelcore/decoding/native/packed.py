"""The native step's arguments, packed once per model (NativeWeights), and the one call into it, by keyword."""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

import torch
from torch import Tensor

if TYPE_CHECKING:
    from modelcore.decoding.cache import KVCache
    from modelcore.decoding.weights import DecoderWeights


@dataclass(frozen=True)
class NativeWeights:
    """The decoder's weights as step.cpp takes them: flat lists, every matrix packed by the module's pack_weight."""

    module: ModuleType  # the compiled step (native_step())
    weights: list[Tensor]  # per layer, its 12 tensors in the module's LAYER_WEIGHTS order
    norm_weights: list[Tensor]  # norm1, norm2, norm3 of each layer, then the final norm (Pre-LN)
    norm_biases: list[Tensor]  # empty tensors for RMSNorm
    norm_eps: list[float]
    norm_kind: int  # 0 LayerNorm, 1 RMSNorm
    w_out: Tensor  # the generator's weight, packed


def pack(module: ModuleType, w: DecoderWeights) -> NativeWeights:
    """Pack the weights for `module`'s step: one copy of every matrix (12 MB for the benchmark's decoder, a few ms).

    The order of a layer's tensors is the module's own (LAYER_WEIGHTS, from step.cpp), read by
    LayerWeights' field names, so it is written in one place.
    """
    weights: list[Tensor] = []
    norms = []
    for lw in w.layers:
        for name in module.LAYER_WEIGHTS:
            tensor = getattr(lw, name)
            weights.append(module.pack_weight(tensor) if name.startswith("w_") else tensor)
        norms += [lw.norm1, lw.norm2, lw.norm3]
    if w.final_norm is not None:
        norms.append(w.final_norm)
    empty = torch.empty(0)
    return NativeWeights(
        module=module,
        weights=weights,
        norm_weights=[n.weight.contiguous() for n in norms],
        norm_biases=[n.bias if n.bias is not None else empty for n in norms],
        norm_eps=[float(n.eps) for n in norms],
        norm_kind=int(norms[0].rms),
        w_out=module.pack_weight(w.w_out),
    )


def step(
    native: NativeWeights, w: DecoderWeights, cache: KVCache, tokens: Tensor | list[int], capture: bool
) -> list[Tensor]:
    """One decoder step of every cached row: [logits (B, V)], then, when capturing, self (L, B, h, T) and cross
    (L, B, h, S) attention; writes this step's keys and values into the cache (the caller advances it)."""
    return native.module.decoder_step(
        tokens=tokens if isinstance(tokens, list) else tokens.tolist(),
        row_at=cache.lengths,
        embedding=w.embedding,
        positions=w.positions,
        weights=native.weights,
        norm_weights=native.norm_weights,
        norm_biases=native.norm_biases,
        norm_eps=native.norm_eps,
        norm_kind=native.norm_kind,
        self_k=cache.self_k,
        self_v=cache.self_v,
        cross_k=cache.cross_k,
        cross_v=cache.cross_v,
        src_lengths=cache.src_lengths,
        w_out=native.w_out,
        b_out=w.b_out,
        n_heads=w.n_heads,
        post=w.post,
        residual=w.residual,
        capture=capture,
    )
