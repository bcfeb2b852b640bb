"""Batches: every pair once per epoch, similar lengths together, the same order for the same seed."""

from __future__ import annotations

import random
import statistics

from modelcore.tokenization import BOS_ID, EOS_ID, PAD_ID
from modelcore.training.batching import Example, collate, epoch_batches


def _examples(n: int = 2000) -> list[Example]:
    rng = random.Random(0)
    return [Example(tuple(range(4, 4 + rng.randint(2, 30))), tuple(range(4, 4 + rng.randint(2, 30)))) for _ in range(n)]


def test_each_epoch_uses_every_example_once_in_a_seeded_order() -> None:
    examples = _examples()
    first = epoch_batches(examples, 32, seed=1, epoch=0)
    assert sorted(i for b in first for i in b) == list(range(len(examples)))
    assert epoch_batches(examples, 32, seed=1, epoch=0) == first
    assert epoch_batches(examples, 32, seed=1, epoch=1) != first
    assert epoch_batches(examples, 32, seed=2, epoch=0) != first


def test_bucketing_puts_similar_lengths_together() -> None:
    examples = _examples()

    def mean_spread(batches: list[list[int]]) -> float:
        return statistics.fmean(
            max(len(examples[i].src) for i in b) - min(len(examples[i].src) for i in b) for b in batches
        )

    assert mean_spread(epoch_batches(examples, 32, seed=0, epoch=0)) <= 1
    assert mean_spread(epoch_batches(examples, 32, seed=0, epoch=0, bucketing=False)) > 20


def test_collate_shifts_the_target_for_teacher_forcing() -> None:
    batch = collate([Example((7, 8, EOS_ID), (5, 6)), Example((9, EOS_ID), (5,))])
    assert batch.src.tolist() == [[7, 8, EOS_ID], [9, EOS_ID, PAD_ID]]
    assert batch.tgt_in.tolist() == [[BOS_ID, 5, 6], [BOS_ID, 5, PAD_ID]]
    assert batch.tgt_out.tolist() == [[5, 6, EOS_ID], [5, EOS_ID, PAD_ID]]
    assert batch.n_tokens == 5
