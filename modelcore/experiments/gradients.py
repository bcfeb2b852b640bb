"""Gradient norms by layer and parameter group: at initialisation (Xiong et al. 2020) and during training."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from modelcore.config import ModelConfig
from modelcore.masks import make_src_mask, make_tgt_mask
from modelcore.model import EncoderDecoder
from modelcore.tokenization import PAD_ID

FIRST_REAL_ID = 4  # ids 0..3 are <pad>, <bos>, <eos>, <unk>
STACKS = ("encoder", "decoder")


def _group_params(layer: nn.Module) -> dict[str, list[Tensor]]:
    """The parameter groups of one layer, named as in the gradflow JSON."""
    groups: dict[str, list[Tensor]] = {}
    for attn_name in ("self_attn", "cross_attn"):
        attn = getattr(layer, attn_name, None)
        if attn is not None:
            # The four projection matrices W^Q, W^K, W^V, W^O together (biases start at 0 and matter little).
            groups[attn_name] = [getattr(attn, p).weight for p in ("q_proj", "k_proj", "v_proj", "out_proj")]
    groups["ffn.linear1"] = [layer.ffn.linear1.weight]  # W_1 of FFN(x) = max(0, x W_1 + b_1) W_2 + b_2
    groups["ffn.linear2"] = [layer.ffn.linear2.weight]  # W_2: the weight Xiong et al. bound
    for norm_name in ("norm1", "norm2", "norm3"):
        norm = getattr(layer, norm_name, None)
        if norm is not None:
            groups[norm_name] = list(norm.parameters())  # gain (and bias for LayerNorm)
    groups["layer"] = list(layer.parameters())
    return groups


def _norm(params: Sequence[Tensor]) -> float:
    grads = [p.grad.detach().float() for p in params if p.grad is not None]
    if not grads:
        return 0.0
    return math.sqrt(sum(float(g.pow(2).sum()) for g in grads))


def layer_grad_norms(model: EncoderDecoder) -> list[dict[str, Any]]:
    """After backward(): each layer's gradient norm per group, encoder layers first, then decoder layers."""
    rows = []
    for stack_name in STACKS:
        stack = getattr(model, stack_name)
        for index, layer in enumerate(stack.layers):
            norms = {name: _norm(params) for name, params in _group_params(layer).items()}
            rows.append({"stack": stack_name, "index": index, "grad_norms": norms})
    return rows


def random_batch(
    config: ModelConfig, generator: torch.Generator, *, batch_size: int, src_len: int, tgt_len: int
) -> tuple[Tensor, Tensor, Tensor]:
    """Random source, decoder input and target ids (no padding): what the model sees at init is noise anyway."""
    src = torch.randint(FIRST_REAL_ID, config.src_vocab_size, (batch_size, src_len), generator=generator)
    tgt = torch.randint(FIRST_REAL_ID, config.tgt_vocab_size, (batch_size, tgt_len + 1), generator=generator)
    return src, tgt[:, :-1], tgt[:, 1:]  # (B, S), (B, T), (B, T)


def _one_backward(model: EncoderDecoder, src: Tensor, tgt_in: Tensor, tgt_out: Tensor) -> list[dict[str, Any]]:
    model.zero_grad(set_to_none=True)
    src_mask, tgt_mask = make_src_mask(src), make_tgt_mask(tgt_in)
    memory = model.encode(src, src_mask)
    logits = model.generator(model.decode(memory, src_mask, tgt_in, tgt_mask))  # (B, T, V)
    F.cross_entropy(logits.transpose(1, 2), tgt_out, ignore_index=PAD_ID).backward()
    # What reaches the token embeddings: how much the loss can still tell about each input token.
    inputs = {"src_embed": _norm([model.src_embed.weight]), "tgt_embed": _norm([model.tgt_embed.weight])}
    return [*layer_grad_norms(model), {"stack": "inputs", "index": 0, "grad_norms": inputs}]


def gradient_norms_at_init(
    config: ModelConfig,
    *,
    seeds: Sequence[int] = (0, 1, 2),
    batches: int = 2,
    batch_size: int = 16,
    src_len: int = 16,
    tgt_len: int = 16,
) -> dict[str, Any]:
    """Per-layer gradient norms of freshly initialised models, mean (and spread) over seeds × batches.

    Dropout is off (eval mode): Xiong et al.'s analysis, like this measurement, is about the weights alone.
    """
    if not seeds or batches < 1:
        raise ValueError("need at least one seed and one batch")
    samples: list[list[dict[str, Any]]] = []
    for seed in seeds:
        torch.manual_seed(seed)
        model = EncoderDecoder(config).eval()
        generator = torch.Generator().manual_seed(10_000 + seed)
        for _ in range(batches):
            batch = random_batch(config, generator, batch_size=batch_size, src_len=src_len, tgt_len=tgt_len)
            samples.append(_one_backward(model, *batch))
    rows = []
    for i, first in enumerate(samples[0]):
        per_group = {name: [s[i]["grad_norms"][name] for s in samples] for name in first["grad_norms"]}
        rows.append({
            "stack": first["stack"],
            "index": first["index"],
            "grad_norms": {name: statistics.fmean(v) for name, v in per_group.items()},
            "grad_norms_std": {name: statistics.pstdev(v) for name, v in per_group.items()},
        })
    return {
        "config": config.to_dict(),
        "seeds": list(seeds),
        "batches": batches,
        "batch_size": batch_size,
        "layers": rows[:-1],
        "inputs": rows[-1]["grad_norms"],
    }


def series(result: dict[str, Any], stack: str, group: str) -> list[float]:
    """One group's mean norms of one stack, layer by layer (first layer first)."""
    return [row["grad_norms"][group] for row in result["layers"] if row["stack"] == stack]
