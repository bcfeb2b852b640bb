"""Instrumentation: what the model computed inside, recorded only on request.

With no `record(model)` context active, no hook is registered and attention
takes the fused F.scaled_dot_product_attention path: instrumentation costs
nothing when off. Inside the context, each module's latest call is kept
(step-by-step decoding reads it after each step).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from modelcore.model.encoder_decoder import EncoderDecoder


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
    """Record attention weights, layer outputs, norm statistics and FFN sparsity while inside."""
    recording = Recording()
    handles: list[RemovableHandle] = []
    attentions: list[nn.Module] = []

    def keep_attention(name: str):
        def hook(weights: Tensor) -> None:
            recording.attention[name] = weights

        return hook

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

    for stack in (model.encoder, model.decoder):
        stack_name = "encoder" if stack is model.encoder else "decoder"
        for i, layer in enumerate(stack.layers):
            prefix = f"{stack_name}.layers.{i}"
            handles.append(layer.register_forward_hook(keep_hidden(prefix)))
            handles.append(layer.ffn.activation.register_forward_hook(keep_zeros(f"{prefix}.ffn")))
            for attn_name in ("self_attn", "cross_attn"):
                attn = getattr(layer, attn_name, None)
                if attn is not None:
                    attn.recorder = keep_attention(f"{prefix}.{attn_name}")
                    attentions.append(attn)
    for name, module in model.named_modules():
        if name.rsplit(".", 1)[-1].startswith("norm") and not isinstance(module, nn.Identity):
            handles.append(module.register_forward_hook(keep_norm(name)))
    try:
        yield recording
    finally:
        for handle in handles:
            handle.remove()
        for attn in attentions:
            attn.recorder = None
