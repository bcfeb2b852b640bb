"""What the layers do to one real sentence: how far each layer moves it (drift) and what each norm does."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from modelcore.masks import make_src_mask, make_tgt_mask
from modelcore.model import EncoderDecoder
from modelcore.model.instrument import record
from modelcore.tokenization import BOS_ID, EOS, Tokenizer


def encode_sentence(tokenizer: Tokenizer, text: str) -> tuple[Tensor, list[str]]:
    """(1, S) ids ending with <eos>, and the token strings a chart labels its positions with."""
    return torch.tensor([tokenizer.source_ids(text)]), [*tokenizer.tokens(text), EOS]


def _rounded(values: Tensor) -> list[float]:
    return [round(float(v), 5) for v in values]


@torch.no_grad()
def representation_drift(model: EncoderDecoder, src: Tensor) -> dict[str, Any]:
    """For each encoder layer and source position: ||h_l - x_0||, ||h_l||, cos(h_l, x_0); and the layer's spread.

    x_0 is the layer stack's input (scaled embedding plus position); src is one sentence (1, S).
    """
    model.eval()
    x0 = model.positional(model.src_embed(src))[0]  # (S, d_model)
    with record(model) as recording:
        model.encode(src, make_src_mask(src))
    layers = []
    for index, hidden in enumerate(recording.hidden_states("encoder")):
        h = hidden[0].float()  # (S, d_model)
        layers.append({
            "index": index,
            "distance": _rounded((h - x0).norm(dim=-1)),
            "norm": _rounded(h.norm(dim=-1)),
            "cosine": _rounded(torch.cosine_similarity(h, x0, dim=-1)),
            # How distinct the positions still are: mean distance from their centroid, relative to their norm.
            "spread": round(float((h - h.mean(dim=0)).norm(dim=-1).mean() / h.norm(dim=-1).mean()), 6),
        })
    return {"input_norm": _rounded(x0.norm(dim=-1)), "layers": layers}


def mean_drift(drifts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Average several representation_drift results (e.g. over seeds), position by position."""
    def average(rows: Sequence[Sequence[float]]) -> list[float]:
        return [round(statistics.fmean(column), 5) for column in zip(*rows, strict=True)]

    layers = []
    for index, first in enumerate(drifts[0]["layers"]):
        rows = [d["layers"][index] for d in drifts]
        per_position = {k: average([r[k] for r in rows]) for k in ("distance", "norm", "cosine")}
        spread = round(statistics.fmean(r["spread"] for r in rows), 6)
        layers.append({"index": first["index"], **per_position, "spread": spread})
    return {"input_norm": average([d["input_norm"] for d in drifts]), "layers": layers}


@torch.no_grad()
def norm_statistics(model: EncoderDecoder, src: Tensor, tgt: Tensor) -> list[dict[str, Any]]:
    """For every norm of the model, per position: mean and variance over d_model before and after it.

    src (1, S) and the target as the decoder reads it, tgt (1, T) starting with <bos>. The mean square
    (what RMSNorm divides by) is variance + mean^2.
    """
    model.eval()
    src_mask, tgt_mask = make_src_mask(src), make_tgt_mask(tgt)
    with record(model) as recording:
        model.decode(model.encode(src, src_mask), src_mask, tgt, tgt_mask)
    rows = []
    for name in _in_forward_order(recording.norms, model):
        stats = recording.norms[name]
        rows.append({
            "name": name,
            "in_mean": _rounded(stats.in_mean[0]),
            "in_var": _rounded(stats.in_var[0]),
            "out_mean": _rounded(stats.out_mean[0]),
            "out_var": _rounded(stats.out_var[0]),
        })
    return rows


def _in_forward_order(norms: dict[str, Any], model: EncoderDecoder) -> list[str]:
    order = [name for name, _ in model.named_modules()]
    return sorted(norms, key=order.index)


def decoder_input(tokenizer: Tokenizer, text: str) -> Tensor:
    """<bos> followed by the target's ids: (1, T)."""
    return torch.tensor([[BOS_ID, *tokenizer.encode(text)]])
