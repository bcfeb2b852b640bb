"""The demonstrations of the lesson pages, each on a real trained model and a student's own sentence.

Every function takes a loaded model folder and plain parameters and returns plain JSON: the web side draws it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import Tensor, nn

from modelcore.checkpoint import LoadedModel
from modelcore.experiments.activations import norm_statistics, representation_drift
from modelcore.generate import greedy_decode, pad_batch
from modelcore.lesson.steps import attention_row
from modelcore.masks import make_src_mask, make_tgt_mask
from modelcore.model import EncoderDecoder, MultiHeadAttention
from modelcore.model.instrument import local_hooks, record
from modelcore.tokenization import BOS_ID, EOS, UNK_ID, SourceError

MAX_SENTENCE_CHARS = 60  # a figure per position stays readable, and the request stays well under a second
PADDING_PARTNER = "猫追老鼠。"  # the shorter sentence of the padding batch when the student gives none


class DemoError(ValueError):
    """A request a demonstration cannot answer; `code` says why (the page words it)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _r(values: Tensor, digits: int = 4) -> Any:
    """A tensor as nested lists of rounded floats (what the figures are drawn from)."""
    def rounded(value: Any) -> Any:
        return [rounded(v) for v in value] if isinstance(value, list) else round(value, digits)

    return rounded(values.detach().float().tolist())


def source_of(loaded: LoadedModel, sentence: Any) -> tuple[Tensor, list[str]]:
    """(1, S) ids ending with <eos> and the token strings; DemoError on empty, long or unreadable text."""
    if not isinstance(sentence, str) or not sentence.strip():
        raise DemoError("empty_source", "the sentence is empty")
    if len(sentence) > MAX_SENTENCE_CHARS:
        raise DemoError("source_too_long", f"the sentence has {len(sentence)} characters; at most {MAX_SENTENCE_CHARS}")
    try:
        ids = loaded.src_tokenizer.source_ids(sentence, loaded.config.max_len)
    except SourceError as error:
        raise DemoError(error.code, str(error)) from None
    tokens = [*loaded.src_tokenizer.tokens(sentence), EOS]
    offsets = loaded.src_tokenizer.hf.encode(sentence, add_special_tokens=False).offsets
    unknown = [sentence[a:b] for (a, b), i in zip(offsets, ids, strict=False) if i == UNK_ID]
    if unknown:
        raise DemoError("unknown_tokens", f"the model has never seen: {' '.join(unknown)}")
    return torch.tensor([ids]), tokens


def _index(name: str, value: Any, size: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < size:
        raise DemoError("bad_choice", f"{name} must be a whole number from 0 to {size - 1}")
    return value


@contextmanager
def _attention_inputs(model: nn.Module) -> Iterator[dict[MultiHeadAttention, tuple[Tensor, ...]]]:
    """What each attention module reads (query, key, value, mask) in this thread's calls, kept while inside."""
    seen: dict[MultiHeadAttention, tuple[Tensor, ...]] = {}
    with local_hooks() as hooks:
        for m in model.modules():
            if isinstance(m, MultiHeadAttention):
                hooks.forward_pre(m, lambda mod, args: seen.__setitem__(mod, args))
        yield seen


def model_summary(loaded: LoadedModel) -> dict[str, Any]:
    c = loaded.config
    return {"d_model": c.d_model, "n_heads": c.n_heads, "d_k": c.d_k, "d_ff": c.d_ff,
            "n_encoder_layers": c.n_encoder_layers, "n_decoder_layers": c.n_decoder_layers,
            "norm_position": c.norm_position, "norm": c.norm}


@torch.no_grad()
def encoder_demo(loaded: LoadedModel, params: dict[str, Any]) -> dict[str, Any]:
    """Embedding + sinusoids, one layer's attention per head, one query row step by step, the FFN's widths."""
    model = loaded.model.eval()
    src, tokens = source_of(loaded, params.get("sentence"))
    S, c = src.size(1), loaded.config
    layer = _index("layer", params.get("layer", 0), c.n_encoder_layers)
    head = _index("head", params.get("head", 0), c.n_heads)
    query = _index("query", params.get("query", 0), S)
    embedded = model.src_embed(src)[0]  # (S, d_model), already times sqrt(d_model)
    positions = model.positional.table[:S]  # (S, d_model)
    block = model.encoder.layers[layer]
    with record(model) as rec, _attention_inputs(model) as seen:
        model.encode(src, make_src_mask(src))
    q_in, k_in, _v, mask = seen[block.self_attn]
    row = attention_row(block.self_attn, q_in[0], k_in[0], head=head, query=query, key_mask=mask[0, 0, 0])
    hidden = torch.relu(block.ffn.linear1(_ffn_input(block, rec.hidden_states("encoder"), model, src, layer)))
    return {
        "model": model_summary(loaded), "tokens": tokens, "layer": layer, "head": head, "query": query,
        "embedding_norm": _r(embedded.norm(dim=-1), 3), "position_norm": _r(positions.norm(dim=-1), 3),
        "positions": _r(positions, 3), "input": _r(embedded + positions, 3),
        "attention": _r(rec.encoder_self[layer][0], 4),  # (h, S, S): every query sees every key
        "row": row,
        "ffn": {"d_model": c.d_model, "d_ff": c.d_ff, "hidden": _r(hidden[0, query], 3),
                "zero_fraction": round(float((hidden[0, query] == 0).float().mean()), 4),
                "shapes": [[S, c.d_model], [S, c.d_ff], [S, c.d_model]]},
        "layer_shapes": [list(h.shape[1:]) for h in rec.hidden_states("encoder")],
    }


def _ffn_input(block: nn.Module, hidden: list[Tensor], model: EncoderDecoder, src: Tensor, layer: int) -> Tensor:
    """What the layer's FFN reads: recomputed from the layer's input, as the layer's own forward does."""
    x = model.positional(model.src_embed(src)) if layer == 0 else hidden[layer - 1]
    mask = make_src_mask(src)
    if block.norm_position == "post":
        return block.norm1(block._skip(x) + block._self_attention_block(x, mask))
    x = block._skip(x) + block._self_attention_block(block.norm1(x), mask)
    return block.norm2(x)


@torch.no_grad()
def _translate(loaded: LoadedModel, src: Tensor) -> list[int]:
    return greedy_decode(loaded.model, src)[0]  # DecodeParams' step limit: the playground's, for the same output


@torch.no_grad()
def decoder_demo(loaded: LoadedModel, params: dict[str, Any]) -> dict[str, Any]:
    """Greedy output, then one teacher-forced pass over it: masked self-attention and cross-attention step by step."""
    model = loaded.model.eval()
    src, src_tokens = source_of(loaded, params.get("sentence"))
    c = loaded.config
    out = _translate(loaded, src)
    tgt = torch.tensor([[BOS_ID, *out]])  # (1, T): what the decoder reads, all at once (teacher forcing)
    T = tgt.size(1)
    layer = _index("layer", params.get("layer", 0), c.n_decoder_layers)
    head = _index("head", params.get("head", 0), c.n_heads)
    query = _index("query", params.get("query", min(2, T - 1)), T)
    block = model.decoder.layers[layer]
    src_mask, tgt_mask = make_src_mask(src), make_tgt_mask(tgt)
    with record(model) as rec, _attention_inputs(model) as seen:
        memory = model.encode(src, src_mask)
        logits = model.generator(model.decode(memory, src_mask, tgt, tgt_mask))  # (1, T, V)
    q_in, k_in, _v, mask = seen[block.cross_attn]
    cross_row = attention_row(block.cross_attn, q_in[0], k_in[0], head=head, query=query, key_mask=mask[0, 0, 0])
    sq, sk, _sv, smask = seen[block.self_attn]
    self_row = attention_row(block.self_attn, sq[0], sk[0], head=head, query=query, key_mask=smask[0, 0, query])
    predicted = logits[0].argmax(-1).tolist()
    tgt_tokens = ["<bos>", *(loaded.tgt_tokenizer.id_to_token(i) for i in out)]
    return {
        "model": model_summary(loaded), "src_tokens": src_tokens, "tgt_tokens": tgt_tokens,
        "output": loaded.tgt_tokenizer.decode(out), "layer": layer, "head": head, "query": query,
        "self_attention": _r(rec.decoder_self[layer][0], 4),  # (h, T, T), zero above the diagonal
        "cross_attention": _r(rec.cross[layer][0], 4),  # (h, T, S)
        "cross_row": cross_row, "self_row": self_row,
        # Teacher forcing over the model's own greedy output predicts that output again, token for token.
        "teacher_forced": [loaded.tgt_tokenizer.id_to_token(i) for i in predicted],
        "teacher_forced_matches": predicted[: len(out)] == out,
        "padding": _padding(loaded, src, src_tokens, params.get("partner") or PADDING_PARTNER),
    }


@torch.no_grad()
def _padding(loaded: LoadedModel, src: Tensor, tokens: list[str], partner: str) -> dict[str, Any]:
    """A batch of two sentences of different lengths: the mask, the attention on padding, and that padding changes nothing."""
    model = loaded.model
    other, other_tokens = source_of(loaded, partner)
    rows = [src[0].tolist(), other[0].tolist()]
    batch = pad_batch(rows)  # (2, S_max), right-padded with <pad>
    mask = make_src_mask(batch)  # (2, 1, 1, S_max)
    with record(model) as rec:
        memory = model.encode(batch, mask)
    shorter = min(range(2), key=lambda i: len(rows[i]))
    n = len(rows[shorter])
    alone = model.encode(batch[shorter : shorter + 1, :n], make_src_mask(batch[shorter : shorter + 1, :n]))
    width = batch.size(1)
    labels = [[*tokens, *["<pad>"] * (width - len(tokens))], [*other_tokens, *["<pad>"] * (width - len(other_tokens))]]
    return {
        "tokens": labels, "mask": mask[:, 0, 0].int().tolist(), "shorter": shorter,
        "attention": _r(rec.encoder_self[0][shorter, 0], 4),  # (S_max, S_max) head 1 of layer 1: pad columns are 0
        "max_difference": float(f"{float((memory[shorter, :n] - alone[0]).abs().max()):.3g}"),
    }


def _without_residuals(model: EncoderDecoder) -> EncoderDecoder:
    """The same trained weights in a model built with every residual path removed (the ablation switch).

    Built from the config and the weights, not deep-copied: a copy of the shared model would carry the hooks that
    other threads' demonstrations hang on it for a moment, and could read their dictionaries mid-change.
    """
    ablated = EncoderDecoder(dataclasses.replace(model.config, residual=False))
    ablated.load_state_dict(model.state_dict())
    param = next(model.parameters())
    return ablated.to(device=param.device, dtype=param.dtype).eval()


@torch.no_grad()
def residual_demo(loaded: LoadedModel, params: dict[str, Any]) -> dict[str, Any]:
    """Per layer: distance from the input and how distinct the positions stay, with and without residuals; norm stats."""
    model = loaded.model.eval()
    src, tokens = source_of(loaded, params.get("sentence"))
    arms = []
    for label, arm in (("residual", model), ("no residual", _without_residuals(model))):
        drift = representation_drift(arm, src)
        arms.append({"label": label, "input_norm": drift["input_norm"], "layers": [
            {"index": layer["index"], "distance": layer["distance"], "cosine": layer["cosine"], "spread": layer["spread"],
             "mean_distance": round(sum(layer["distance"]) / len(layer["distance"]), 4)}
            for layer in drift["layers"]]})
    out = _translate(loaded, src)
    tgt = torch.tensor([[BOS_ID, *out]])
    stats = norm_statistics(model, src, tgt)
    norm_index = _index("norm", params.get("norm", 0), len(stats))
    norm_module = dict(model.named_modules())[stats[norm_index]["name"]]
    return {
        "model": model_summary(loaded), "tokens": tokens, "arms": arms, "norms": [s["name"] for s in stats],
        "norm": {**stats[norm_index], "tokens": ["<bos>", *(loaded.tgt_tokenizer.id_to_token(i) for i in out)]
                 if stats[norm_index]["name"].startswith("decoder") else tokens},
        "norm_parameters": [name for name, _ in norm_module.named_parameters()],
        "norm_buffers": [name for name, _ in norm_module.named_buffers()],
    }


def _layernorm(x: Tensor) -> Tensor:
    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-5)


def _batchnorm(x: Tensor, keep: Tensor) -> Tensor:
    """Normalise each feature over the positions kept (batch and time together), as BatchNorm does in training."""
    rows = x[keep]  # (N, d_model)
    return (x - rows.mean(0)) / torch.sqrt(rows.var(0, unbiased=False) + 1e-5)


def _norm_input(model: EncoderDecoder, batch: Tensor) -> Tensor:
    """(B, S, d_model): what the encoder's first norm reads, before any norm has touched it.

    Post-LN: the embeddings plus positions plus the first self-attention; Pre-LN: the embeddings plus positions.
    A norm's own output (a Post-LN layer's) has mean 0 already and would hide what RMSNorm leaves in.
    """
    seen: dict[str, Tensor] = {}
    with local_hooks() as hooks:
        hooks.forward_pre(model.encoder.layers[0].norm1, lambda _m, args: seen.__setitem__("x", args[0]))
        model.encode(batch, make_src_mask(batch))
    return seen["x"]


RUNNING_SENTENCES = 256  # sentences of the zh-en grammar whose batches give BatchNorm's running averages
RUNNING_BATCH = 16


_RUNNING: dict[str, tuple[Tensor, Tensor]] = {}  # checkpoint hash -> BatchNorm's running mean and variance


def _running_batchnorm(loaded: LoadedModel) -> Callable[[Tensor], Tensor]:
    """BatchNorm in eval mode over the first norm's input, its running averages gathered as in training.

    The averages depend on the weights only, so they are gathered once per checkpoint (a second or so).
    """
    key = loaded.checkpoint_hash or str(id(loaded.model))
    if key not in _RUNNING:
        from modelcore.tasks.zh_en import generate_sentences

        sentences = [s.zh for s in generate_sentences(RUNNING_SENTENCES, seed=1)]  # the same every time
        norm = nn.BatchNorm1d(loaded.config.d_model, affine=False)  # momentum 0.1, PyTorch's default
        norm.train()
        for start in range(0, len(sentences), RUNNING_BATCH):
            batch = pad_batch([loaded.src_tokenizer.source_ids(s, loaded.config.max_len)
                               for s in sentences[start : start + RUNNING_BATCH]])
            norm(_norm_input(loaded.model, batch)[make_src_mask(batch)[:, 0, 0]])  # updates the running averages
        if len(_RUNNING) >= 8:  # a few models at most: forget the oldest
            _RUNNING.pop(list(_RUNNING)[0], None)  # another thread may have dropped it already
        _RUNNING[key] = (norm.running_mean.clone(), norm.running_var.clone())
    mean, var = _RUNNING[key]
    return lambda x: (x - mean) / torch.sqrt(var + 1e-5)  # what BatchNorm1d.eval() computes (affine off)


def _largest(moved: Tensor) -> float:
    """The largest distance any position moved, to three significant figures."""
    return float(f"{float(moved.norm(dim=-1).max()):.3g}")


@torch.no_grad()
def norms_demo(loaded: LoadedModel, params: dict[str, Any]) -> dict[str, Any]:
    """BatchNorm in training mode moves with the batch and its padding, in inference mode it does not, and the two
    modes disagree; LayerNorm's (and RMSNorm's) statistics stay each token's own."""
    model = loaded.model.eval()
    src, tokens = source_of(loaded, params.get("sentence"))
    other, other_tokens = source_of(loaded, params.get("partner") or PADDING_PARTNER)
    batch = pad_batch([src[0].tolist(), other[0].tolist()])
    real = make_src_mask(batch)[:, 0, 0]  # (2, S_max) True on real tokens
    acts = _norm_input(model, batch)  # (2, S_max, d_model)
    n = src.size(1)
    alone = acts[:1, :n]
    training = {
        "alone": _batchnorm(alone, torch.ones(1, n, dtype=torch.bool))[0],
        "batch": _batchnorm(acts, real)[0, :n],
        "batch_with_padding": _batchnorm(acts, torch.ones_like(real))[0, :n],
    }
    running = _running_batchnorm(loaded)
    inference = {"alone": running(alone[0]), "batch": running(acts[real])[:n]}  # rows of the sentence come first
    ln_alone, ln_batch = _layernorm(alone[0]), _layernorm(acts[0, :n])
    rms = alone[0] / torch.sqrt(alone[0].pow(2).mean(-1, keepdim=True) + 1e-5)
    return {
        "tokens": tokens, "partner": other_tokens, "activations": "encoder.layers.0.norm1 input",
        # How far each token's normalised vector moves from its value with the sentence alone (per position).
        "batchnorm_shift": {**{k: _r((v - training["alone"]).norm(dim=-1), 4) for k, v in training.items() if k != "alone"},
                            "inference": _r((inference["batch"] - inference["alone"]).norm(dim=-1), 6)},
        # The same token in the same batch of two, normalised as in training and as at inference.
        "mode_gap": _r((training["batch"] - inference["batch"]).norm(dim=-1), 4),
        "largest_shift": {"training": _largest(training["batch"] - training["alone"]),
                          "training_with_padding": _largest(training["batch_with_padding"] - training["alone"]),
                          "inference": _largest(inference["batch"] - inference["alone"]),
                          "layernorm": _largest(ln_batch - ln_alone)},
        "normalised_norm": _r(inference["alone"].norm(dim=-1), 4),
        "running_sentences": RUNNING_SENTENCES, "running_batch": RUNNING_BATCH,
        "layernorm_shift": _r((ln_batch - ln_alone).norm(dim=-1), 6),
        "layernorm_out": {"mean": _r(ln_alone.mean(-1), 4), "var": _r(ln_alone.var(-1, unbiased=False), 4)},
        "rmsnorm_out": {"mean": _r(rms.mean(-1), 4), "rms": _r(rms.pow(2).mean(-1).sqrt(), 4)},
        "input": {"mean": _r(alone[0].mean(-1), 4), "var": _r(alone[0].var(-1, unbiased=False), 4)},
    }
