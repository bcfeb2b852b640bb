"""Instrumentation: what the model computed inside, recorded only on request.

With no `record(model)` context active, no hook is registered and attention
takes the fused F.scaled_dot_product_attention path: instrumentation costs
nothing when off. Inside the context, each module's latest call is kept
(step-by-step decoding reads it after each step).

A recording belongs to the thread (or asyncio task) that opened it: the hooks it
registers fire for every caller of the shared model, but write only for calls made
inside the context that opened them (a context variable tells), so a worker's
threads can instrument one warm model at once without reading each other's data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from modelcore.model.attention import MultiHeadAttention, recording_attention
from modelcore.model.encoder_decoder import EncoderDecoder

# The hook sets open in the current thread or task (see LocalHooks).
_OPEN: ContextVar[tuple[object, ...]] = ContextVar("instrument_open_hooks", default=())


class LocalHooks:
    """Forward (pre-)hooks that act only for calls made in the context that opened them; removed on close."""

    def __init__(self) -> None:
        self._handles: list[RemovableHandle] = []

    def _mine(self, fn: Callable[..., None]) -> Callable[..., None]:
        def hook(*args: object) -> None:
            if self in _OPEN.get():
                fn(*args)  # returns nothing: the module's inputs and output are left as they are

        return hook

    def forward(self, module: nn.Module, fn: Callable[[nn.Module, tuple, Tensor], None]) -> None:
        self._handles.append(module.register_forward_hook(self._mine(fn)))

    def forward_pre(self, module: nn.Module, fn: Callable[[nn.Module, tuple], None]) -> None:
        self._handles.append(module.register_forward_pre_hook(self._mine(fn)))


@contextmanager
def local_hooks() -> Iterator[LocalHooks]:
    """A LocalHooks open while inside: register hooks on it; they act only for this thread's or task's calls."""
    hooks = LocalHooks()
    token = _OPEN.set((*_OPEN.get(), hooks))
    try:
        yield hooks
    finally:
        _OPEN.reset(token)
        for handle in hooks._handles:
            handle.remove()


@dataclass
class NormStats:
    """Per-position mean and variance over the d_model features, before and after one norm: each (B, T)."""

    in_mean: Tensor
    in_var: Tensor
    out_mean: Tensor
    out_var: Tensor


@dataclass
class Recording:
    """What one instrumented forward recorded, keyed by module path (e.g. "decoder.layers.1.cross_attn")."""

    attention: dict[str, Tensor] = field(default_factory=dict)  # weights (B, h, T_q, T_k)
    hidden: dict[str, Tensor] = field(default_factory=dict)  # each layer's output (B, T, d_model)
    norms: dict[str, NormStats] = field(default_factory=dict)
    ffn_zero_fraction: dict[str, Tensor] = field(default_factory=dict)  # share of d_ff units at 0, (B, T)

    def _by_layer(self, store: dict[str, Tensor], stack: str, suffix: str) -> list[Tensor]:
        prefix = f"{stack}.layers."
        keys = [k for k in store if k.startswith(prefix) and k.endswith(suffix)]
        return [store[k] for k in sorted(keys, key=lambda k: int(k[len(prefix) :].split(".")[0]))]

    @property
    def encoder_self(self) -> list[Tensor]:
        """Encoder self-attention weights, one (B, h, S, S) per layer."""
        return self._by_layer(self.attention, "encoder", ".self_attn")

    @property
    def decoder_self(self) -> list[Tensor]:
        """Masked decoder self-attention weights, one (B, h, T, T) per layer."""
        return self._by_layer(self.attention, "decoder", ".self_attn")

    @property
    def cross(self) -> list[Tensor]:
        """Cross-attention weights (decoder queries over source keys), one (B, h, T, S) per layer."""
        return self._by_layer(self.attention, "decoder", ".cross_attn")

    def hidden_states(self, stack: str) -> list[Tensor]:
        """Output of each layer of "encoder" or "decoder", in order."""
        return self._by_layer(self.hidden, stack, "")


def _position_stats(x: Tensor) -> tuple[Tensor, Tensor]:
    x = x.detach().float()
    return x.mean(dim=-1), x.var(dim=-1, unbiased=False)  # (B, T) each


@contextmanager
def record(model: EncoderDecoder) -> Iterator[Recording]:
    """Record attention weights, layer outputs, norm statistics and FFN sparsity while inside (this thread's calls)."""
    recording = Recording()
    recorders: dict[nn.Module, Callable[[Tensor], None]] = {}

    def keep_attention(name: str) -> Callable[[Tensor], None]:
        def recorder(weights: Tensor) -> None:
            recording.attention[name] = weights

        return recorder

    def keep_hidden(name: str):
        def hook(_module: nn.Module, _inputs: tuple, output: Tensor) -> None:
            recording.hidden[name] = output.detach()

        return hook

    def keep_norm(name: str):
        def hook(_module: nn.Module, inputs: tuple, output: Tensor) -> None:
            in_mean, in_var = _position_stats(inputs[0])
            out_mean, out_var = _position_stats(output)
            recording.norms[name] = NormStats(in_mean, in_var, out_mean, out_var)

        return hook

    def keep_zeros(name: str):
        def hook(_module: nn.Module, _inputs: tuple, output: Tensor) -> None:
            recording.ffn_zero_fraction[name] = (output.detach() == 0).float().mean(dim=-1)

        return hook

    with local_hooks() as hooks:
        for stack in (model.encoder, model.decoder):
            stack_name = "encoder" if stack is model.encoder else "decoder"
            for i, layer in enumerate(stack.layers):
                prefix = f"{stack_name}.layers.{i}"
                hooks.forward(layer, keep_hidden(prefix))
                hooks.forward(layer.ffn.activation, keep_zeros(f"{prefix}.ffn"))
                for attn_name in ("self_attn", "cross_attn"):
                    attn = getattr(layer, attn_name, None)
                    if isinstance(attn, MultiHeadAttention):
                        recorders[attn] = keep_attention(f"{prefix}.{attn_name}")
        for name, module in model.named_modules():
            if name.rsplit(".", 1)[-1].startswith("norm") and not isinstance(module, nn.Identity):
                hooks.forward(module, keep_norm(name))
        with recording_attention(recorders):
            yield recording
