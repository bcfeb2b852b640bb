"""Seeds trained together: S models of one configuration stacked along a leading dimension, trained as one.

Each seed keeps what its lone run has: its own initial weights (the very EncoderDecoder that `build_probe` makes
from that seed), its own task data and batch order (its BatchStream), and its own Adam moments (Adam is elementwise,
so one Adam over the stacked tensors is S Adams). The forward pass is the model's own arithmetic written over a
seed dimension: each linear layer one batched matmul (torch.baddbmm) over the S weight matrices (on a CPU without
AVX-512, one product per seed on its own rows: SEED_BY_SEED_PRODUCTS); attention (F.scaled_dot_product_attention),
LayerNorm and the loss seed by seed. Seeds with similar batch lengths go in groups (from 8 seeds), each group padded
to its longest batch: padded targets are not counted, and each seed attends over its own rows and lengths only.

The seeds' numbers are their lone runs' to the last bit (tests/modelcore/experiments/test_sweep.py, bench/sweep.py),
with torch's and MKL's AVX2 or AVX-512 kernels, on MKL's path for Intel CPUs and on its path for the others (AMD's):
every operation is the one the lone model runs, in its order, and the sums over a batch's rows (each linear layer's
weight and bias gradients, LayerNorm's, the loss) are taken over the seed's own rows only. Padding adds exact zeros,
but a matrix product over more rows groups its sums otherwise or rounds a row otherwise: attention over a padded
batch (the products inside its kernel run over the padded queries and keys) on MKL's path for a CPU that is not
Intel's, a linear layer over padded rows with MKL's AVX2 kernels. Training amplifies such last-bit differences until,
by step 300, curves that started equal no longer are.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from modelcore.experiments.comparisons import Arm, comparison_arms
from modelcore.experiments.merge import judged, merge_sweeps  # noqa: F401  (merge_sweeps: read here too)
from modelcore.experiments.runs import build_probe, final_loss, probe_task
from modelcore.experiments.spec import RunConfig
from modelcore.model import EncoderDecoder
from modelcore.tokenization import BOS_ID, EOS_ID, PAD_ID
from modelcore.training.batching import Batch, BatchStream, Example, collate, encode_pairs

MAX_SEEDS = 64
GROUP = 4  # seeds per group of similar batch lengths (StackedModel.seed_losses); 0: one group
# Each seed's linear layers on its own rows only, one product per seed (_SeedLinear), where one batched product over
# the padded rows rounds otherwise: MKL's AVX2 kernels give a row other last bits when a product has more rows
# (AVX-512's do not). It costs a stacked step about a fifth (the lesson's small model), so AVX-512 keeps one.
SEED_BY_SEED_PRODUCTS = torch.backends.cpu.get_cpu_capability() != "AVX512"
Progress = Callable[[dict[str, Any]], None]


class StackedModel:
    """The parameters of S EncoderDecoders of one configuration, stacked: leaf tensors of shape (S, ...).

    Every operation is the lone model's own, in the lone model's order (three projections, not one joined matrix;
    LayerNorm's kernel with the gain and bias), so that each seed's numbers round as its lone run's do: a gradient
    summed in another order differs in its last bits, and training amplifies such differences step by step.
    """

    def __init__(self, models: Sequence[EncoderDecoder]) -> None:
        if not models:
            raise ValueError("need at least one model")
        config = models[0].config
        if config.tie_embeddings or config.share_embeddings:
            raise ValueError("stacked training does not tie embeddings")
        if config.dropout:
            raise ValueError("stacked training runs without dropout, as the probe runs do")
        if any(m.config != config for m in models):
            raise ValueError("every stacked model needs the same configuration")
        self.config = config
        self.seeds = len(models)
        states = [dict(m.named_parameters()) for m in models]
        self.params: dict[str, Tensor] = {}
        for name in states[0]:
            with torch.no_grad():
                stacked = torch.stack([state[name].detach() for state in states])
            self.params[name] = stacked.contiguous().requires_grad_(True)
        self._active = self.params  # the parameters the forward pass reads: all seeds', or a group's
        self.table = models[0].positional.table  # the sinusoids (max_len, d_model)

    def parameters(self) -> list[Tensor]:
        return list(self.params.values())

    def model(self, index: int) -> EncoderDecoder:
        """Seed `index`'s weights as a plain EncoderDecoder (for evaluation, or to save)."""
        model = EncoderDecoder(self.config)
        with torch.no_grad():
            for name, param in model.named_parameters():
                param.copy_(self.params[name][index])
        return model.eval()

    # The forward pass, over (S, B, T) ids.
    def logits(self, src: Tensor, tgt_in: Tensor, causal: bool = True, seeds: Tensor | None = None,
               lengths: Sequence[tuple[int, int, int]] | None = None) -> Tensor:
        """src (S', B, Ls), tgt_in (S', B, T) -> logits (S', B, T, V): every seed's, or those indexed by `seeds`.

        lengths: each seed's own batch before padding, (rows, source length, target length); None: no padding.
        """
        if seeds is None:
            self._active = self.params
        else:
            self._active = {name: p.index_select(0, seeds) for name, p in self.params.items()}
        S, B, Ls = src.shape
        T = tgt_in.size(2)
        c = self.config
        src_rows, tgt_rows = _Rows.of(src, lengths), _Rows.of(tgt_in, lengths, target=True)
        src_mask = (src != PAD_ID).view(S * B, 1, 1, Ls)
        tgt_mask = (tgt_in != PAD_ID).view(S * B, 1, 1, T)
        if causal:
            tgt_mask = tgt_mask & torch.ones(T, T, dtype=torch.bool).tril()
        x = self._embed("src_embed", src)  # (S, B*Ls, d)
        for i in range(c.n_encoder_layers):
            x = self._encoder_layer(f"encoder.layers.{i}.", x, src_rows, src_mask)
        memory = self._final_norm("encoder.norm.", x)
        y = self._embed("tgt_embed", tgt_in)
        for i in range(c.n_decoder_layers):
            y = self._decoder_layer(f"decoder.layers.{i}.", y, memory, tgt_rows, src_rows, tgt_mask, src_mask)
        y = self._final_norm("decoder.norm.", y)
        out = self._linear("generator.", y, tgt_rows)  # (S, B*T, V)
        return out.view(S, B, T, -1)

    def _embed(self, name: str, ids: Tensor) -> Tensor:
        S, B, L = ids.shape
        table = self._active[f"{name}.embedding.weight"]  # (S, V, d)
        V, d = table.shape[1:]
        offset = (torch.arange(S) * V).view(S, 1, 1)
        x = F.embedding(ids + offset, table.reshape(S * V, d)) * math.sqrt(d)  # (S, B, L, d)
        return (x + self.table[:L]).view(S, B * L, d)

    def _linear(self, prefix: str, x: Tensor, rows: _Rows) -> Tensor:
        """x (S, N, d_in) -> (S, N, d_out) with each seed's own weight (d_out, d_in) and bias."""
        weight, bias = self._active[prefix + "weight"], self._active[prefix + "bias"]
        if torch.is_grad_enabled():  # padded or not: every seed's gradient by the lone run's own call
            return _SeedLinear.apply(x, weight, bias, rows)
        return torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))

    def _norm(self, prefix: str, x: Tensor) -> Tensor:
        d = x.size(-1)
        weight = self._active[prefix + "weight"]
        if self.config.norm == "rmsnorm":
            return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5) * weight.unsqueeze(1)
        # Seed by seed: LayerNorm's own kernel with each seed's gain and bias rounds as the lone run's does (a
        # normalisation followed by a stacked gain and bias gives other last bits, which training then amplifies).
        bias = self._active[prefix + "bias"]
        return torch.stack([F.layer_norm(x[s], (d,), weight[s], bias[s], 1e-5) for s in range(x.size(0))])

    def _final_norm(self, prefix: str, x: Tensor) -> Tensor:
        return self._norm(prefix, x) if self.config.norm_position == "pre" else x

    def _heads(self, t: Tensor, B: int, length: int) -> tuple[Tensor, ...]:
        S, _, d = t.shape
        h = self.config.n_heads
        return t.view(S, B, length, h, d // h).transpose(2, 3).unbind(0)  # S x (B, h, L, dk)

    def _attend(self, prefix: str, q: Tensor, k: Tensor, v: Tensor, rows: _Rows, key_rows: _Rows,
                mask: Tensor) -> Tensor:
        """Seed by seed, on the seed's own rows, query and key lengths, as its lone run calls it: over padded
        queries or keys (exact zeros) the kernel's products group their sums otherwise on some BLAS paths (MKL on
        an AMD CPU), and training amplifies the last bits. The padded positions' output is 0."""
        S, _, d = q.shape
        B, Lq = rows.B, rows.L
        qs, ks, vs = self._heads(q, B, Lq), self._heads(k, B, key_rows.L), self._heads(v, B, key_rows.L)
        masks = mask.view(S, B, *mask.shape[1:]).unbind(0)
        outs = []
        for s in range(S):
            n, tq = rows.sizes[s]
            tk = key_rows.sizes[s][1]
            out = F.scaled_dot_product_attention(qs[s][:n, :, :tq], ks[s][:n, :, :tk], vs[s][:n, :, :tk],
                                                 attn_mask=masks[s][:n, :, :tq, :tk])  # (n, h, tq, dk)
            outs.append(F.pad(out.transpose(1, 2), (0, 0, 0, 0, 0, Lq - tq, 0, B - n)))  # (B, Lq, h, dk)
        return self._linear(prefix + "out_proj.", torch.stack(outs).view(S, B * Lq, d), rows)

    def _self_attention(self, prefix: str, x: Tensor, rows: _Rows, mask: Tensor) -> Tensor:
        q, k, v = (self._linear(prefix + f"{p}_proj.", x, rows) for p in "qkv")
        return self._attend(prefix, q, k, v, rows, rows, mask)

    def _cross_attention(self, prefix: str, y: Tensor, memory: Tensor, rows: _Rows, src_rows: _Rows,
                         mask: Tensor) -> Tensor:
        q = self._linear(prefix + "q_proj.", y, rows)
        k, v = (self._linear(prefix + f"{p}_proj.", memory, src_rows) for p in "kv")
        return self._attend(prefix, q, k, v, rows, src_rows, mask)

    def _ffn(self, prefix: str, x: Tensor, rows: _Rows) -> Tensor:
        hidden = torch.relu(self._linear(prefix + "ffn.linear1.", x, rows))
        return self._linear(prefix + "ffn.linear2.", hidden, rows)

    def _encoder_layer(self, p: str, x: Tensor, rows: _Rows, src_mask: Tensor) -> Tensor:
        skip = self.config.residual
        if self.config.norm_position == "post":
            a = self._self_attention(p + "self_attn.", x, rows, src_mask)
            x = self._norm(p + "norm1.", x + a if skip else a)
            f = self._ffn(p, x, rows)
            return self._norm(p + "norm2.", x + f if skip else f)
        a = self._self_attention(p + "self_attn.", self._norm(p + "norm1.", x), rows, src_mask)
        x = x + a if skip else a
        f = self._ffn(p, self._norm(p + "norm2.", x), rows)
        return x + f if skip else f

    def _decoder_layer(self, p: str, y: Tensor, memory: Tensor, rows: _Rows, src_rows: _Rows, tgt_mask: Tensor,
                       src_mask: Tensor) -> Tensor:
        skip = self.config.residual
        if self.config.norm_position == "post":
            a = self._self_attention(p + "self_attn.", y, rows, tgt_mask)
            y = self._norm(p + "norm1.", y + a if skip else a)
            c = self._cross_attention(p + "cross_attn.", y, memory, rows, src_rows, src_mask)
            y = self._norm(p + "norm2.", y + c if skip else c)
            f = self._ffn(p, y, rows)
            return self._norm(p + "norm3.", y + f if skip else f)
        a = self._self_attention(p + "self_attn.", self._norm(p + "norm1.", y), rows, tgt_mask)
        y = y + a if skip else a
        c = self._cross_attention(p + "cross_attn.", self._norm(p + "norm2.", y), memory, rows, src_rows, src_mask)
        y = y + c if skip else c
        f = self._ffn(p, self._norm(p + "norm3.", y), rows)
        return y + f if skip else f

    def seed_losses(self, batches: Sequence[Batch], causal: bool = True, group: int = 0) -> Tensor:
        """Each seed's mean cross-entropy over its own batch's counted target tokens: (S,).

        group > 0: seeds are taken in groups of about that many, those with the shortest batches together, each
        group padded to its own longest batch (seeds' batches differ in length: one padding for all would cost
        the longest batch's time for every seed). The same numbers either way: padding changes no seed's loss.
        """
        S = len(batches)
        if group <= 0 or S < 2 * group:
            return _losses(self.logits, stack_batches(batches), causal, None)
        order = sorted(range(S), key=lambda i: (batches[i].src.size(1) + batches[i].tgt_in.size(1), i))
        n_groups = S // group
        chunks = [order[k * S // n_groups:(k + 1) * S // n_groups] for k in range(n_groups)]
        parts = [_losses(self.logits, stack_batches([batches[i] for i in chunk]), causal, torch.tensor(chunk))
                 for chunk in chunks]
        inverse = torch.empty(S, dtype=torch.long)
        inverse[torch.tensor(order)] = torch.arange(S)
        return torch.cat(parts)[inverse]


def _losses(logits_of: Callable[..., Tensor], batch: StackedBatch, causal: bool, seeds: Tensor | None) -> Tensor:
    logits = logits_of(batch.src, batch.tgt_in, causal, seeds, batch.lengths)  # (S', B, T, V)
    # Seed by seed on its own batch's shape, as the lone run reduces it (mean over the counted tokens).
    return torch.stack([F.cross_entropy(logits[s, :n, :t].contiguous().transpose(1, 2), batch.tgt_out[s, :n, :t],
                                        ignore_index=PAD_ID) for s, (n, _ls, t) in enumerate(batch.lengths)])


class _Rows:
    """Which rows of a stacked (S, B*L, k) activation are each seed's own batch: seed s's lone run computes on
    rows [:B_s] x positions [:L_s] only."""

    def __init__(self, B: int, L: int, sizes: Sequence[tuple[int, int]]) -> None:  # noqa: N803
        self.B, self.L, self.sizes = B, L, list(sizes)

    @classmethod
    def of(cls, ids: Tensor, lengths: Sequence[tuple[int, int, int]] | None, target: bool = False) -> _Rows:
        S, B, L = ids.shape
        if lengths is None:
            return cls(B, L, [(B, L)] * S)
        return cls(B, L, [(n, t if target else ls) for n, ls, t in lengths])

    def real(self, t: Tensor, s: int) -> Tensor:
        """Seed s's own rows of t (S, B*L, k), in its lone run's order, as one contiguous (B_s*L_s, k)."""
        n, length = self.sizes[s]
        return t[s].view(self.B, self.L, -1)[:n, :length].reshape(n * length, -1)

    def each(self, own: Sequence[Tensor], width: int,
             product: Callable[[int, Tensor, Tensor | None], Tensor]) -> Tensor:
        """(S, B*L, width) whose seed s's own rows are product(s, own[s], out) and padded rows 0.

        own[s]: seed s's own rows (real()); out: None, or, for a seed with no padding, its rows of the result, where
        product writes them."""
        result = own[0].new_empty(len(own), self.B * self.L, width)
        for s, (n, length) in enumerate(self.sizes):
            if (n, length) == (self.B, self.L):
                product(s, own[s], result[s])
                continue
            seed = result[s].view(self.B, self.L, width)
            seed[n:] = 0
            seed[:n, length:] = 0
            seed[:n, :length] = product(s, own[s], None).view(n, length, width)
        return result


class _SeedLinear(torch.autograd.Function):
    """A stacked linear layer whose weight and bias gradients are each seed's sums over its own rows only, by the
    lone run's own calls; with SEED_BY_SEED_PRODUCTS, the output and the input's gradient too (the padded rows' are
    then 0), else one batched product each, row by row.

    The padded rows add exact zeros, yet a sum over more rows groups otherwise, and a product over more rows can
    round a row otherwise: the last bits differ, and training amplifies them."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, weight: Tensor, bias: Tensor, rows: _Rows) -> Tensor:
        own = [rows.real(x, s) for s in range(x.size(0))]  # kept for the weight's gradient
        ctx.save_for_backward(weight)
        ctx.rows, ctx.own = rows, own
        if not SEED_BY_SEED_PRODUCTS:
            return torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))
        return rows.each(own, weight.size(1), lambda s, xs, out: torch.addmm(bias[s], xs, weight[s].t(), out=out))

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        (weight,) = ctx.saved_tensors
        rows: _Rows = ctx.rows
        own = [rows.real(grad, s) for s in range(grad.size(0))]
        grad_x = None
        if ctx.needs_input_grad[0] and SEED_BY_SEED_PRODUCTS:  # as addmm's backward computes it (weight.t().t())
            grad_x = rows.each(own, weight.size(2), lambda s, gs, out: torch.mm(gs, weight[s], out=out))
        elif ctx.needs_input_grad[0]:
            grad_x = torch.bmm(grad, weight)
        grad_weight = torch.empty_like(weight)
        grad_bias = torch.empty(weight.shape[:2], dtype=weight.dtype)
        for s, (xs, gs) in enumerate(zip(ctx.own, own, strict=True)):
            grad_weight[s] = gs.t().mm(xs)  # as addmm's backward computes it for F.linear's weight.t()
            grad_bias[s] = gs.sum(0)
        return grad_x, grad_weight, grad_bias, None


@dataclass
class StackedBatch:
    """One batch per seed, padded to a common shape: src (S, B, Ls), tgt_in and tgt_out (S, B, T)."""

    src: Tensor
    tgt_in: Tensor
    tgt_out: Tensor
    n_tokens: Tensor  # (S,) counted target tokens of each seed's own batch
    lengths: list[tuple[int, int, int]]  # each seed's own batch: (rows, source length, target length)


def stack_batches(batches: Sequence[Batch]) -> StackedBatch:
    """Pad each seed's batch to the step's largest shape. A filler row (when a seed's batch is smaller, at an
    epoch's end) is one <eos> and one <bos> with nothing to predict: it attends somewhere and costs nothing."""
    S = len(batches)
    B = max(b.src.size(0) for b in batches)
    Ls = max(b.src.size(1) for b in batches)
    T = max(b.tgt_in.size(1) for b in batches)
    src = torch.full((S, B, Ls), PAD_ID, dtype=torch.long)
    tgt_in = torch.full((S, B, T), PAD_ID, dtype=torch.long)
    tgt_out = torch.full((S, B, T), PAD_ID, dtype=torch.long)
    src[:, :, 0], tgt_in[:, :, 0] = EOS_ID, BOS_ID
    for s, b in enumerate(batches):
        n, ls, t = b.src.size(0), b.src.size(1), b.tgt_in.size(1)
        src[s, :n, :ls] = b.src
        src[s, :n, ls:] = PAD_ID
        tgt_in[s, :n, :t] = b.tgt_in
        tgt_in[s, :n, t:] = PAD_ID
        tgt_out[s, :n, :t] = b.tgt_out
    counted = torch.tensor([float(b.n_tokens) for b in batches])
    lengths = [(b.src.size(0), b.src.size(1), b.tgt_in.size(1)) for b in batches]
    return StackedBatch(src, tgt_in, tgt_out, counted, lengths)


def _optimizer(params: list[Tensor], config: RunConfig) -> torch.optim.Optimizer:
    """One Adam over the stacked tensors, the lone runs' settings and implementation (single-tensor, as torch picks
    on the CPU): Adam is elementwise, so it is S Adams with the same roundings. A fused or foreach Adam is not
    faster here (it is a few per cent of a step) and rounds otherwise."""
    return torch.optim.Adam(params, lr=config.lr, betas=config.betas, eps=1e-9, foreach=False)


@dataclass
class _Seed:
    seed: int
    stream: BatchStream
    valid: list[Example]
    blowup: float
    losses: list[float]
    status: str = "completed"
    diverged_at: int | None = None
    reason: str = ""


def _divergence(loss: float, blowup: float) -> str:
    if not math.isfinite(loss):
        return "nan"
    return "blow-up" if loss > blowup else ""


def train_stacked(
    arm: Arm,
    seeds: Sequence[int],
    *,
    on_step: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
    group: int = GROUP,
) -> dict[str, Any]:
    """Train `arm` once per seed, all seeds as one batched model; each seed's curve is its lone run's.

    Returns {"label", "seeds", "runs": [{"seed", "loss", "final_loss", "status", "diverged_at", "reason",
    "valid": {"loss", "accuracy"}}], "seconds"}. A probe arm's seed that diverges (NaN, or a loss over
    blowup_factor x ln V) stops being recorded there, as its lone run stops; the others go on.
    """
    seeds = list(seeds)
    if not 1 <= len(seeds) <= MAX_SEEDS or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ValueError(f"seeds must be 1 to {MAX_SEEDS} different whole numbers from 0")
    started = time.perf_counter()
    config = arm.config
    models, states = [], []
    for seed in seeds:
        seed_config = config.replace(seed=seed)
        probe = build_probe(seed_config, probe_task(seed_config))
        max_len = probe.model.config.max_len
        examples = encode_pairs(probe.task.train, probe.src_tokenizer, probe.tgt_tokenizer, max_len)
        valid = encode_pairs(probe.task.valid, probe.src_tokenizer, probe.tgt_tokenizer, max_len)
        blowup = config.blowup_factor * math.log(probe.tgt_tokenizer.vocab_size)
        models.append(probe.model)
        states.append(_Seed(seed, BatchStream(examples, config.batch_size, seed), valid, blowup, []))
    if len({m.config for m in models}) != 1:
        raise ValueError("the seeds' tasks give vocabularies of different sizes: they cannot be stacked")
    stacked = StackedModel(models)
    del models
    optimizer = _optimizer(stacked.parameters(), config)
    probe_loop = arm.loop == "probe"
    live = list(range(len(seeds)))
    for step in range(1, config.steps + 1):
        lr = config.rate(step) if probe_loop else config.lr
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr
        losses = stacked.seed_losses([s.stream.next() for s in states], arm.causal, group)
        optimizer.zero_grad(set_to_none=True)
        losses.sum().backward()
        values = losses.tolist()
        for i in list(live):
            state = states[i]
            reason = _divergence(values[i], state.blowup) if probe_loop else ""
            if reason:  # as the lone run: this step is not kept, and the seed stops here
                state.status, state.diverged_at, state.reason = "diverged", step, reason
                live.remove(i)
            else:
                state.losses.append(round(values[i], 5))  # as the lone runs keep it
        if not live:
            break
        optimizer.step()  # a stopped seed's slice goes on moving; nothing of it is read or kept
        if on_step is not None:
            on_step({"step": step, "steps": config.steps, "loss": [values[i] for i in live]})
        if should_stop is not None and should_stop():
            for i in live:
                states[i].status = "stopped"
            break
    valid = _validate(stacked, states, arm.causal)
    runs = [{"seed": s.seed, "loss": s.losses, "final_loss": final_loss(s.losses),
             "status": s.status, "diverged_at": s.diverged_at, "reason": s.reason, "valid": v}
            for s, v in zip(states, valid, strict=True)]
    return {"label": arm.label, "seeds": seeds, "config": config.to_dict(), "causal": arm.causal, "runs": runs,
            "seconds": round(time.perf_counter() - started, 2)}


@torch.no_grad()
def _validate(stacked: StackedModel, states: list[_Seed], causal: bool) -> list[dict[str, float]]:
    """Teacher-forced loss and token accuracy of each seed on its own validation pairs, all seeds at once."""
    batch = stack_batches([collate(s.valid) for s in states])
    logits = stacked.logits(batch.src, batch.tgt_in, causal)
    S = logits.size(0)
    counted = (batch.tgt_out != PAD_ID).view(S, -1)
    per_token = F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch.tgt_out.reshape(-1),
                                ignore_index=PAD_ID, reduction="none").view(S, -1)
    right = (logits.argmax(-1).view(S, -1) == batch.tgt_out.view(S, -1)) & counted
    n = counted.sum(dim=1).clamp(min=1)
    losses, accuracy = (per_token.sum(dim=1) / n).tolist(), (right.sum(dim=1) / n).tolist()
    return [{"loss": round(a, 5), "accuracy": round(b, 4)} for a, b in zip(losses, accuracy, strict=True)]


def sweep(
    name: str,
    seeds: int | Sequence[int],
    *,
    steps: int | None = None,
    base: RunConfig | None = None,
    on_progress: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Comparison `name` (modelcore.experiments.comparisons) with S seeds per arm, each arm's seeds stacked.

    `seeds`: a count S (seeds 0 .. S-1) or the seeds themselves. Returns sweep_arms' result with "comparison".
    """
    arms = comparison_arms(name, base)
    if steps is not None:
        arms = tuple(Arm(a.label, a.config.replace(steps=steps), a.causal, a.loop) for a in arms)
    chosen = range(seeds) if isinstance(seeds, int) else seeds
    return {"comparison": name, **sweep_arms(arms, chosen, on_progress=on_progress, should_stop=should_stop)}


def sweep_arms(
    arms: Sequence[Arm],
    seeds: Sequence[int],
    *,
    on_progress: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Each arm trained with every seed, the arm's seeds stacked; then the verdict over the final losses.

    Returns {"seeds", "steps", "arms": [train_stacked's result + "final_losses"], "verdict", "machine"}: the verdict is
    modelcore.experiments.verdict.verdict(...).to_dict() over the seeds every arm completed (None when some arm
    has none, or a run was stopped). on_progress receives {"progress": 0..1, "arm", "step", "steps", "loss" (the
    mean over the arm's running seeds)}.
    """
    chosen = list(seeds)
    report = on_progress or (lambda _info: None)
    results = []
    for i, arm in enumerate(arms):
        def on_step(info: dict[str, Any], i: int = i, arm: Arm = arm) -> None:
            done = (i * info["steps"] + info["step"]) / (len(arms) * info["steps"])
            losses = info["loss"]
            report({"progress": done, "arm": arm.label, "step": info["step"], "steps": info["steps"],
                    "loss": statistics.fmean(losses) if losses else None})

        result = train_stacked(arm, chosen, on_step=on_step, should_stop=should_stop)
        result["final_losses"] = [run["final_loss"] for run in result["runs"]]
        results.append(result)
        if any(run["status"] == "stopped" for run in result["runs"]):
            break
    return {**judged(chosen, arms[0].config.steps, results, complete=len(results) == len(arms)),
            "machine": machine()}


def machine() -> str:
    """What computed a result, as its notes quote it: "AMD EPYC, 2 cores, torch 2.13.0+cpu, 1 thread". The same
    settings give the same curves on the same machine; another CPU's (or torch's) arithmetic can end them a little
    differently."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), cpu)
    except OSError:
        pass
    threads = torch.get_num_threads()
    return (f"{cpu}, {os.cpu_count()} cores, torch {torch.__version__}, "
            f"{threads} thread{'s' if threads != 1 else ''}")
