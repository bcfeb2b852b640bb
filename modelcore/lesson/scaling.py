"""What attention buys and what it costs, measured on the real model: paths to distant positions against a
recurrent network's, the n² of the attention weights against the FFN's n, and the KV cache's time per step.

Timings are this worker's, now (other requests share its cores): the pages quote their ratios, never a time.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from modelcore.checkpoint import LoadedModel
from modelcore.decoding.steppers import CachedStepper, RecomputeStepper
from modelcore.lesson.demos import model_summary, source_of
from modelcore.masks import make_src_mask
from modelcore.model.attention import recording_attention
from modelcore.tokenization import BOS_ID

RECURRENCE_LENGTHS = (4, 8, 16, 32, 64)  # the input positions the gradient crosses (the longest: the profile)
COST_LENGTHS = (32, 64, 128, 256, 512, 1024)  # past the model's 512 positions only its attention layer is timed
CACHE_STEPS = 128  # tokens written, with and without the cache
CACHE_WINDOW = 16  # steps whose median the page compares, early and late
RNN_SEED = 0  # the recurrent networks' initial weights, the same on every request


def _g(value: float) -> float:
    """Three significant figures: gradients here span twenty orders of magnitude, rounding to decimals would lose them."""
    return float(f"{value:.3g}")


def _cycled(ids: list[int], n: int) -> Tensor:
    """(1, n): the sentence's tokens (without <eos>) repeated until n positions are filled."""
    body = ids[:-1] or ids
    return torch.tensor([[body[i % len(body)] for i in range(n)]])


def _recurrent(kind: type[nn.RNNBase], width: int) -> nn.RNNBase:
    """An untrained RNN or GRU of the model's width, with PyTorch's initial weights drawn from a fixed seed."""
    net = kind(width, width, batch_first=True)
    generator = torch.Generator().manual_seed(RNN_SEED)
    bound = width ** -0.5  # PyTorch's own initialisation: U(-1/sqrt(hidden), 1/sqrt(hidden)) for every weight
    with torch.no_grad():
        for p in net.parameters():
            p.uniform_(-bound, bound, generator=generator)
    return net.eval()


def _last_output_gradients(stack: Callable[[Tensor], Tensor], x: Tensor) -> Tensor:
    """(n,): the Frobenius norm of d y[last] / d x[j] for every input position j, from one batched backward pass."""
    x = x.detach().requires_grad_(True)
    with torch.enable_grad():
        y = stack(x)[0, -1]  # (d_model,)
        basis = torch.eye(y.numel())  # one backward per output feature, all at once
        (grad,) = torch.autograd.grad(y, x, grad_outputs=basis, is_grads_batched=True)  # (d_model, 1, n, d_model)
    return grad[:, 0].pow(2).sum(dim=(0, 2)).sqrt()


def recurrence_demo(loaded: LoadedModel, params: dict[str, Any]) -> dict[str, Any]:
    """How strongly the last position's output depends on the first input, the encoder against an RNN and a GRU."""
    model = loaded.model.eval()
    src, tokens = source_of(loaded, params.get("sentence"))
    ids, d = src[0].tolist(), loaded.config.d_model
    stacks = {"rnn": _recurrent(nn.RNN, d), "gru": _recurrent(nn.GRU, d)}
    first: dict[str, list[float]] = {"encoder": [], "rnn": [], "gru": []}
    own: list[float] = []
    profile: dict[str, list[float]] = {}
    for n in RECURRENCE_LENGTHS:
        cycled = _cycled(ids, n)
        mask = make_src_mask(cycled)
        x = model.positional(model.src_embed(cycled)).detach()  # (1, n, d_model): what the first layer reads
        grads = {"encoder": _last_output_gradients(lambda x, mask=mask: model.encoder(x, mask), x)}
        grads |= {name: _last_output_gradients(lambda x, net=net: net(x)[0], x) for name, net in stacks.items()}
        for name, grad in grads.items():
            first[name].append(_g(float(grad[0])))
        own.append(_g(float(grads["encoder"][-1])))
        profile = {name: [_g(float(v)) for v in grad] for name, grad in grads.items()}  # the longest stays
    return {
        "model": model_summary(loaded), "tokens": tokens, "lengths": list(RECURRENCE_LENGTHS),
        "first": first, "own": own, "profile": profile,
        # Steps that must run one after another in a forward pass over n positions.
        "sequential": {"encoder": loaded.config.n_encoder_layers, "rnn": list(RECURRENCE_LENGTHS)},
    }


def _median_ms(work: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1000, 3)


@torch.no_grad()
def cost_demo(loaded: LoadedModel, params: dict[str, Any]) -> dict[str, Any]:
    """Time and memory of the first encoder layer's self-attention and FFN for growing n, and the arithmetic."""
    model = loaded.model.eval()
    src, tokens = source_of(loaded, params.get("sentence"))
    c, block = loaded.config, model.encoder.layers[0]
    table = model.positional.table  # (max_len, d_model); positions past it repeat it (timing only)
    attention_ms, ffn_ms, weights_bytes = [], [], []
    for n in COST_LENGTHS:
        x = model.src_embed(_cycled(src[0].tolist(), n)) + table[torch.arange(n) % table.size(0)]  # (1, n, d_model)
        held: list[Tensor] = []

        def attend(x: Tensor = x, held: list[Tensor] = held) -> None:
            held.clear()
            with recording_attention({block.self_attn: held.append}):  # the weights written out, (1, h, n, n)
                block.self_attn(x, x, x, None)

        repeats = 5 if n <= 256 else 3
        attention_ms.append(_median_ms(attend, repeats))
        weights_bytes.append(held[0].nbytes)
        ffn_ms.append(_median_ms(lambda x=x: block.ffn(x), repeats))
    d, d_ff = c.d_model, c.d_ff
    return {
        "model": model_summary(loaded), "tokens": tokens, "lengths": list(COST_LENGTHS), "max_len": c.max_len,
        "attention_ms": attention_ms, "ffn_ms": ffn_ms, "weights_bytes": weights_bytes,
        # Multiply-adds per layer: q·k and the weighted sum of v (n² each, d_model wide) against the four
        # projections and the FFN (n each). The n² part is the larger once n > 2·d_model + d_ff.
        "multiply_adds": {"n_squared": [2 * n * n * d for n in COST_LENGTHS],
                          "linear": [4 * n * d * d + 2 * n * d * d_ff for n in COST_LENGTHS]},
        "crossover": 2 * d + d_ff,
    }


def _step_times(stepper: CachedStepper | RecomputeStepper, src: list[int]) -> tuple[list[float], list[int]]:
    """Milliseconds of each of CACHE_STEPS steps, feeding back the most probable token (never stopping at <eos>)."""
    stepper.reserve(1, CACHE_STEPS + 1)
    stepper.add_sources([src], CACHE_STEPS + 1)
    token, times, sizes = torch.tensor([BOS_ID]), [], []
    for _ in range(CACHE_STEPS):
        start = time.perf_counter()
        logits = stepper.step(token)  # (1, V)
        times.append(round((time.perf_counter() - start) * 1000, 3))
        sizes.append(stepper.info(range(1)).bytes)
        token = logits.argmax(-1)
    return times, sizes


@torch.no_grad()
def cache_demo(loaded: LoadedModel, params: dict[str, Any]) -> dict[str, Any]:
    """Time per generated token with the KV cache and with the prefix recomputed every step, and the cache's size."""
    model = loaded.model.eval()
    src, tokens = source_of(loaded, params.get("sentence"))
    ids = src[0].tolist()
    recompute_ms, _ = _step_times(RecomputeStepper(model), ids)
    cached_ms, cache_bytes = _step_times(CachedStepper(model, native=False), ids)  # the same PyTorch, not the C++ step
    return {"model": model_summary(loaded), "tokens": tokens, "steps": CACHE_STEPS,
            "cached_ms": cached_ms, "recompute_ms": recompute_ms, "cache_bytes": cache_bytes,
            "window": CACHE_WINDOW, "early": {"cached": _window(cached_ms, 0), "recompute": _window(recompute_ms, 0)},
            "late": {"cached": _window(cached_ms, -1), "recompute": _window(recompute_ms, -1)},
            "total_ms": {"cached": round(sum(cached_ms), 1), "recompute": round(sum(recompute_ms), 1)}}


def _window(times: list[float], end: int) -> float:
    """The median of the first (end 0) or last (end -1) CACHE_WINDOW steps after the first: one slow step is noise."""
    part = times[1 : 1 + CACHE_WINDOW] if end == 0 else times[-CACHE_WINDOW:]
    return round(statistics.median(part), 3)
