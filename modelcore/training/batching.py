"""Turning text pairs into padded id batches, similar lengths together (length bucketing)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from modelcore.generate import pad_batch
from modelcore.tokenization import BOS_ID, EOS_ID, PAD_ID, Tokenizer

POOL_BATCHES = 50  # sort within pools of this many batches: similar lengths, yet a fresh mix each epoch


@dataclass(frozen=True)
class Example:
    """One pair as ids: the source ends with <eos>; the target has neither <bos> nor <eos>."""

    src: tuple[int, ...]
    tgt: tuple[int, ...]


@dataclass
class Batch:
    """Teacher forcing: the decoder reads tgt_in = <bos> y and is trained to output tgt_out = y <eos>."""

    src: Tensor  # (B, S)
    tgt_in: Tensor  # (B, T)
    tgt_out: Tensor  # (B, T), PAD_ID where there is nothing to predict
    n_tokens: int  # target tokens that count in the loss

    def to(self, device: torch.device) -> Batch:
        return Batch(self.src.to(device), self.tgt_in.to(device), self.tgt_out.to(device), self.n_tokens)


def encode_pairs(
    pairs: Sequence[tuple[str, str]], src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer, max_len: int
) -> list[Example]:
    """Tokenise each pair, cutting what does not fit the model's positional table."""
    examples = []
    for source, target in pairs:
        src = src_tokenizer.source_ids(source, max_len, truncate=True)
        tgt = tgt_tokenizer.encode(target)[: max_len - 1]
        examples.append(Example(tuple(src), tuple(tgt)))
    return examples


def collate(examples: Sequence[Example]) -> Batch:
    """Pad a list of examples into one batch."""
    src = pad_batch([e.src for e in examples])
    tgt_in = pad_batch([(BOS_ID, *e.tgt) for e in examples])
    tgt_out = pad_batch([(*e.tgt, EOS_ID) for e in examples])
    return Batch(src, tgt_in, tgt_out, int((tgt_out != PAD_ID).sum()))


def epoch_batches(
    examples: Sequence[Example], batch_size: int, seed: int, epoch: int, bucketing: bool = True
) -> list[list[int]]:
    """Index batches for one epoch, the same for the same (seed, epoch): what resuming relies on."""
    rng = random.Random(seed * 1_000_003 + epoch)
    order = list(range(len(examples)))
    rng.shuffle(order)
    batches: list[list[int]] = []
    pool_size = batch_size * POOL_BATCHES
    for start in range(0, len(order), pool_size):
        pool = order[start : start + pool_size]
        if bucketing:
            pool.sort(key=lambda i: (len(examples[i].src), len(examples[i].tgt)))
        batches.extend(pool[i : i + batch_size] for i in range(0, len(pool), batch_size))
    rng.shuffle(batches)
    return batches


class BatchStream:
    """Endless batches epoch after epoch; its position (epoch, index) is part of the training state."""

    def __init__(
        self, examples: Sequence[Example], batch_size: int, seed: int, epoch: int = 0, index: int = 0,
        bucketing: bool = True,
    ) -> None:
        if not examples:
            raise ValueError("no training examples")
        self.examples, self.batch_size, self.seed, self.bucketing = examples, batch_size, seed, bucketing
        self.epoch, self.index = epoch, index
        self._batches = epoch_batches(examples, batch_size, seed, epoch, bucketing)

    def next(self) -> Batch:
        if self.index >= len(self._batches):
            self.epoch, self.index = self.epoch + 1, 0
            self._batches = epoch_batches(self.examples, self.batch_size, self.seed, self.epoch, self.bucketing)
        batch = collate([self.examples[i] for i in self._batches[self.index]])
        self.index += 1
        return batch

    def position(self) -> dict[str, int]:
        return {"epoch": self.epoch, "index": self.index}
