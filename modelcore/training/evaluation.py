"""Evaluation: teacher-forced loss and token accuracy, greedy exact match and BLEU."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sacrebleu
import torch
import torch.nn.functional as F

from modelcore.decoding.params import positions_limit
from modelcore.generate import greedy_decode
from modelcore.model import EncoderDecoder
from modelcore.tokenization import PAD_ID, Tokenizer
from modelcore.training.batching import Example, collate, encode_pairs


@torch.no_grad()
def evaluate(
    model: EncoderDecoder,
    pairs: Sequence[tuple[str, str]],
    src_tokenizer: Tokenizer,
    tgt_tokenizer: Tokenizer,
    *,
    batch_size: int = 128,
) -> dict[str, Any]:
    """{"loss", "token_accuracy", "exact_match", "bleu", "n"}: fractions in 0..1, BLEU in 0..100."""
    if not pairs:
        raise ValueError("nothing to evaluate: the split is empty")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    examples = encode_pairs(pairs, src_tokenizer, tgt_tokenizer, model.config.max_len)
    loss_sum, correct, counted = 0.0, 0, 0
    for chunk in _batches(examples, batch_size):
        batch = collate([examples[i] for i in chunk]).to(device)
        logits = model(batch.src, batch.tgt_in).float()  # (B, T, V)
        loss_sum += F.cross_entropy(logits.transpose(1, 2), batch.tgt_out, ignore_index=PAD_ID, reduction="sum").item()
        real = batch.tgt_out != PAD_ID
        correct += int(((logits.argmax(-1) == batch.tgt_out) & real).sum())
        counted += int(real.sum())
    outputs = greedy_outputs(model, examples, batch_size=batch_size)
    exact = sum(ids == list(example.tgt) for ids, example in zip(outputs, examples, strict=True))
    hypotheses = [tgt_tokenizer.decode(ids) for ids in outputs]
    model.train(was_training)
    references = [target for _, target in pairs]
    return {
        "loss": loss_sum / counted,
        "token_accuracy": correct / counted,
        "exact_match": exact / len(examples),
        # force: our targets are tokenised on purpose ("cats ."), sacrebleu would warn on every call.
        "bleu": sacrebleu.corpus_bleu(hypotheses, [references], force=True).score,
        "n": len(examples),
    }


@torch.no_grad()
def greedy_outputs(model: EncoderDecoder, examples: Sequence[Example], *, batch_size: int = 128) -> list[list[int]]:
    """The greedy output ids of each example, in their order: the hypotheses evaluate() scores.

    A batch's step limit is its longest reference plus 10, within the model's positions, rather than
    DecodeParams' twice the source plus 10: an evaluation knows its references, and this limit cuts a
    looping hypothesis early without cutting one that could still match.
    """
    device = next(model.parameters()).device
    outputs: list[list[int]] = [[] for _ in examples]
    for chunk in _batches(examples, batch_size):
        src = collate([examples[i] for i in chunk]).src.to(device)
        longest = max(len(examples[i].tgt) for i in chunk)
        decoded = greedy_decode(model, src, max_len=min(longest + 10, positions_limit(model.config.max_len)))
        for i, ids in zip(chunk, decoded, strict=True):
            outputs[i] = ids
    return outputs


def _batches(examples: Sequence[Example], batch_size: int) -> list[list[int]]:
    """Indices of `examples` in batches, sorted by source length so that batches waste little on padding."""
    order = sorted(range(len(examples)), key=lambda i: len(examples[i].src))
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
