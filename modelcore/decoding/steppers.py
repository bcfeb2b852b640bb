"""Steppers: given each row's latest token, the next-token logits of every row.

CachedStepper is the fast path (encoder once, KV cache, one position per step).
RecomputeStepper is the path the lesson describes: every step runs the model's own
decoder over the whole prefix again. Both share one interface, so every search
strategy runs on either and the two can be checked against each other.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import Tensor

from modelcore.decoding.cache import CacheInfo, KVCache
from modelcore.decoding.native import fast_here, native_step, packed
from modelcore.decoding.native.packed import NativeWeights
from modelcore.decoding.weights import DecoderWeights, LayerWeights, decoder_weights
from modelcore.masks import make_src_mask, make_tgt_mask
from modelcore.model import EncoderDecoder
from modelcore.model.attention import recording_attention
from modelcore.model.instrument import record
from modelcore.tokenization import PAD_ID


class Stepper(Protocol):
    """What BatchDecoder steps: rows of decoder state, each fed its latest token, giving next-token logits."""

    capture: bool  # keep this step's attention weights in `attention`
    attention: tuple[Tensor, Tensor] | None  # (L, B, h, T) self, (L, B, h, S) cross

    @property
    def rows(self) -> int: ...

    @property
    def lengths(self) -> list[int]:
        """Positions fed so far, per row."""
        ...

    @property
    def src_lengths(self) -> list[int]: ...

    def reserve(self, rows: int, length: int) -> None: ...

    def add_sources(self, srcs: list[list[int]], length: int, capture: bool = False) -> list[Tensor] | None: ...

    def select(self, index: list[int]) -> None:
        """Keep, reorder or repeat rows."""
        ...

    def info(self, rows: range | list[int]) -> CacheInfo: ...

    def step(self, tokens: Tensor | list[int]) -> Tensor:
        """tokens (B,), a tensor or a list of ids -> logits (B, V)."""
        ...


@contextmanager
def _eval_mode(model: EncoderDecoder) -> Iterator[None]:
    """Decoding never applies dropout, even when called on a model that is training."""
    was_training = model.training
    if not was_training:  # the usual case: walking every submodule twice would cost a few ms per call
        yield
        return
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def encode_sources(
    model: EncoderDecoder, srcs: list[list[int]], capture: bool
) -> tuple[Tensor, Tensor, list[Tensor] | None]:
    """Right-pad and encode sources: memory (n, S, d_model), src_mask (n, 1, 1, S), encoder attention."""
    device = next(model.parameters()).device
    S = max(len(s) for s in srcs)
    src = torch.full((len(srcs), S), PAD_ID, dtype=torch.long, device=device)  # (n, S)
    for i, ids in enumerate(srcs):
        src[i, : len(ids)] = torch.tensor(ids, dtype=torch.long, device=device)
    src_mask = make_src_mask(src)  # (n, 1, 1, S)
    with _eval_mode(model):
        if not capture:
            return model.encode(src, src_mask), src_mask, None
        # Only the attention weights, through the hook MultiHeadAttention offers (record() keeps much more).
        weights: list[Tensor] = []
        with recording_attention({layer.self_attn: weights.append for layer in model.encoder.layers}):
            memory = model.encode(src, src_mask)  # only this call's weights: other threads share the model
        return memory, src_mask, weights  # one (n, h, S, S) per layer


class CachedStepper:
    """Incremental decoding: each step feeds one token per row through the decoder, reading the KV cache."""

    def __init__(
        self, model: EncoderDecoder, capture: bool = False, fused_attention: bool | None = None,
        native: bool | None = None,
    ) -> None:
        self.model = model
        self.w: DecoderWeights = decoder_weights(model)
        param = self.w.w_out
        self.cache = KVCache(len(self.w.layers), self.w.n_heads, self.w.d_k, param.dtype, param.device)
        self.capture = capture
        self.attention: tuple[Tensor, Tensor] | None = None  # (L, B, h, T) self, (L, B, h, S) cross
        # F.scaled_dot_product_attention when not capturing (None: yes); False: the two matmuls always.
        self.fused_attention = True if fused_attention is None else fused_attention
        self._self_rows: list[Tensor] = []
        self._cross_rows: list[Tensor] = []
        # The native step (native/step.cpp) for float32 on a CPU. None: when it is built and fast on this CPU
        # (native.fast_here()); True: whenever it is built (the tests compare it with the Python step); False: never.
        use_native = (native is not False and param.device.type == "cpu" and param.dtype == torch.float32
                      and (native or fast_here()))
        self._native = _native_weights(self.w) if use_native else None
        if native and self._native is None:
            raise RuntimeError("the native decoder step is not available here (see modelcore/decoding/native)")

    @property
    def rows(self) -> int:
        return self.cache.rows

    @property
    def lengths(self) -> list[int]:
        return self.cache.lengths

    def reserve(self, rows: int, length: int) -> None:
        """Room for this many rows and positions, allocated now rather than while decoding."""
        self.cache.reserve(rows, length)

    @property
    def src_lengths(self) -> list[int]:
        return self.cache.src_lengths

    def add_sources(self, srcs: list[list[int]], length: int, capture: bool = False) -> list[Tensor] | None:
        """Encode new sources and append one row each; returns encoder attention when capturing."""
        memory, _, encoder_attention = encode_sources(self.model, srcs, capture)
        n, S, d = memory.shape
        cross_k, cross_v = [], []
        for lw in self.w.layers:
            kv = torch.addmm(lw.b_cross_kv, memory.reshape(n * S, d), lw.w_cross_kv)  # (n S, 2 d)
            kv = kv.view(n, S, 2, self.w.n_heads, self.w.d_k).permute(2, 0, 3, 1, 4)  # (2, n, h, S, d_k)
            cross_k.append(kv[0].contiguous())
            cross_v.append(kv[1].contiguous())
        self.cache.append_rows(cross_k, cross_v, [len(s) for s in srcs], length)
        return encoder_attention

    def select(self, index: list[int]) -> None:
        """Keep, reorder or repeat rows."""
        self.cache.select(index)

    def info(self, rows: range | list[int]) -> CacheInfo:
        return self.cache.info(rows)

    @property
    def native(self) -> bool:
        """Whether steps take the native step (CPU, float32, built)."""
        return self._native is not None

    @property
    def native_module(self) -> ModuleType | None:
        """The compiled module when steps take the native step (BatchDecoder hands it the logits too), else None."""
        return self._native.module if self._native is not None else None

    def step(self, tokens: Tensor | list[int]) -> Tensor:
        """tokens (B,) at each row's next position -> logits (B, V)."""
        w, cache = self.w, self.cache
        if self._native is not None:
            return self._native_step(self._native, tokens)
        if isinstance(tokens, list):
            tokens = torch.tensor(tokens, device=w.embedding.device)
        x = torch.embedding(w.embedding, tokens)  # (B, d_model)
        t = cache.uniform_length
        x = x + (w.positions[t] if t is not None else w.positions.index_select(0, cache.positions()))
        self_mask = cache.self_mask()
        self._self_rows, self._cross_rows = [], []
        for index, lw in enumerate(w.layers):
            if w.post:  # x = LN(x + F(x))
                x = lw.norm1(self._skip(x, self._self_attention_block(index, lw, x, self_mask)))
                x = lw.norm2(self._skip(x, self._cross_attention_block(index, lw, x)))
                x = lw.norm3(self._skip(x, self._ffn_block(lw, x)))
            else:  # x = x + F(LN(x))
                x = self._skip(x, self._self_attention_block(index, lw, lw.norm1(x), self_mask))
                x = self._skip(x, self._cross_attention_block(index, lw, lw.norm2(x)))
                x = self._skip(x, self._ffn_block(lw, lw.norm3(x)))
        if w.final_norm is not None:
            x = w.final_norm(x)
        cache.advance()
        if self.capture:
            self.attention = (torch.stack(self._self_rows), torch.stack(self._cross_rows))
        return torch.addmm(w.b_out, x, w.w_out)  # (B, V)

    def _native_step(self, native: NativeWeights, tokens: Tensor | list[int]) -> Tensor:
        """The same step in one native call, attention weights kept when capturing."""
        logits, *attention = packed.step(native, self.w, self.cache, tokens, self.capture)
        self.cache.advance()
        if self.capture:
            self.attention = (attention[0], attention[1])  # (L, B, h, T), (L, B, h, S)
        return logits

    def _skip(self, x: Tensor, out: Tensor) -> Tensor:
        """Residual sum (in place on the fresh sublayer output), or the sublayer alone in the ablation."""
        return out.add_(x) if self.w.residual else out

    def _self_attention_block(self, index: int, lw: LayerWeights, x: Tensor, mask: Tensor | None) -> Tensor:
        B, h, d_k = x.size(0), self.w.n_heads, self.w.d_k
        q, k, v = torch.addmm(lw.b_qkv, x, lw.w_qkv).view(B, 3, h, 1, d_k).unbind(1)  # (B, h, 1, d_k) each
        k, v = self.cache.write(index, k, v)  # (B, h, T, d_k) each
        out = self._attend(q, k, v, mask, self._self_rows)  # (B, h, 1, d_k)
        return torch.addmm(lw.b_self_out, out.view(B, h * d_k), lw.w_self_out)  # (B, d_model)

    def _cross_attention_block(self, index: int, lw: LayerWeights, x: Tensor) -> Tensor:
        B, h, d_k = x.size(0), self.w.n_heads, self.w.d_k
        q = torch.addmm(lw.b_cross_q, x, lw.w_cross_q).view(B, h, 1, d_k)
        cache = self.cache
        out = self._attend(q, cache.cross_k[index], cache.cross_v[index], cache.src_mask, self._cross_rows)
        return torch.addmm(lw.b_cross_out, out.view(B, h * d_k), lw.w_cross_out)  # (B, d_model)

    def _ffn_block(self, lw: LayerWeights, x: Tensor) -> Tensor:
        hidden = torch._addmm_activation(lw.b_ff1, x, lw.w_ff1)  # relu(x W1 + b1): (B, d_ff)
        return torch.addmm(lw.b_ff2, hidden, lw.w_ff2)  # (B, d_model)

    def _attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, rows: list[Tensor]) -> Tensor:
        """q (B, h, 1, d_k), already scaled, over k, v (B, h, T, d_k); keeps the weights (B, h, T) when capturing.

        Without capture, the fused kernel (F.scaled_dot_product_attention). With capture, two batched
        matmuls and a softmax, which keep the weights: on a CPU they cost about what the fused
        kernel costs for one query row (bench/decode.py: capture is 0.94-1.09x the plain step).
        """
        if not self.capture and self.fused_attention:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=1.0)
        B, h, T, d_k = k.shape
        scores = torch.bmm(q.reshape(B * h, 1, d_k), k.reshape(B * h, T, d_k).transpose(1, 2))  # (B h, 1, T)
        if mask is not None:
            scores.view(B, h, T).masked_fill_(mask.logical_not().view(B, 1, T), float("-inf"))
        weights = scores.softmax(-1)  # masked positions get exactly 0
        rows.append(weights.view(B, h, T))
        return torch.bmm(weights, v.reshape(B * h, T, d_k)).view(B, h, 1, d_k)


def _native_weights(w: DecoderWeights) -> NativeWeights | None:
    """The weights packed for the compiled step, or None when it is not built.

    Packed once and kept with the weights, so that every stepper of the same model shares them.
    """
    module = native_step()
    if module is None:
        return None
    if w.native is None:
        w.native = packed.pack(module, w)
    return w.native


class RecomputeStepper:
    """Decoding without a cache: every step runs the model's decoder over each row's whole prefix."""

    def __init__(self, model: EncoderDecoder, capture: bool = False) -> None:
        self.model = model
        self.capture = capture
        self.attention: tuple[Tensor, Tensor] | None = None
        self.memory: Tensor | None = None  # (B, S, d_model)
        self.src_lengths: list[int] = []
        self.prefixes: list[list[int]] = []  # tokens fed so far, per row (starting with <bos>)
        self._layers = model.config.n_decoder_layers

    @property
    def rows(self) -> int:
        return len(self.prefixes)

    @property
    def lengths(self) -> list[int]:
        return [len(p) for p in self.prefixes]

    def reserve(self, rows: int, length: int) -> None:
        """Nothing to preallocate: this path keeps no cache."""

    def add_sources(self, srcs: list[list[int]], length: int, capture: bool = False) -> list[Tensor] | None:
        """Encode new sources and append one row each; returns encoder attention when capturing."""
        memory, _, encoder_attention = encode_sources(self.model, srcs, capture)
        if self.memory is not None:
            S = max(memory.size(1), self.memory.size(1))
            memory = torch.cat([_pad_positions(self.memory, S), _pad_positions(memory, S)])
        self.memory = memory
        self.src_lengths += [len(s) for s in srcs]
        self.prefixes += [[] for _ in srcs]
        return encoder_attention

    def select(self, index: list[int]) -> None:
        if not index:
            self.memory, self.src_lengths, self.prefixes = None, [], []
            return
        assert self.memory is not None
        S = max(self.src_lengths[i] for i in index)
        self.memory = self.memory.index_select(0, torch.tensor(index, device=self.memory.device))[:, :S]
        self.src_lengths = [self.src_lengths[i] for i in index]
        self.prefixes = [list(self.prefixes[i]) for i in index]

    def info(self, rows: range | list[int]) -> CacheInfo:
        """Nothing is cached: the same keys and values are recomputed every step."""
        return CacheInfo(self._layers, 0, 0, 0)

    def step(self, tokens: Tensor | list[int]) -> Tensor:
        assert self.memory is not None
        for prefix, token in zip(self.prefixes, tokens if isinstance(tokens, list) else tokens.tolist(), strict=True):
            prefix.append(token)
        device = self.memory.device
        lengths = self.lengths
        T = max(lengths)
        tgt = torch.full((self.rows, T), PAD_ID, dtype=torch.long, device=device)  # (B, T), right-padded
        for i, prefix in enumerate(self.prefixes):
            tgt[i, : len(prefix)] = torch.tensor(prefix, device=device)
        src_lengths = torch.tensor(self.src_lengths, device=device)
        src_mask = (torch.arange(self.memory.size(1), device=device) < src_lengths[:, None])[:, None, None, :]
        last = torch.tensor(lengths, device=device) - 1  # each row's newest position
        rows = torch.arange(self.rows, device=device)
        with _eval_mode(self.model):
            if self.capture:
                with record(self.model) as recording:
                    hidden = self.model.decode(self.memory, src_mask, tgt, make_tgt_mask(tgt))
                self.attention = (
                    torch.stack([a[rows, :, last] for a in recording.decoder_self]),  # (L, B, h, T)
                    torch.stack([a[rows, :, last] for a in recording.cross]),  # (L, B, h, S)
                )
            else:
                hidden = self.model.decode(self.memory, src_mask, tgt, make_tgt_mask(tgt))  # (B, T, d_model)
            return self.model.generator(hidden[rows, last])  # (B, V)


def _pad_positions(x: Tensor, S: int) -> Tensor:
    """Zero-pad (n, S_x, d) along positions to S."""
    return x if x.size(1) == S else F.pad(x, (0, 0, 0, S - x.size(1)))


def make_stepper(model: EncoderDecoder, cache: bool = True, capture: bool = False) -> Stepper:
    """The fast cached stepper, or the recompute one (cache=False) for comparison."""
    return CachedStepper(model, capture) if cache else RecomputeStepper(model, capture)

