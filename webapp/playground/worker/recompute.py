"""The KV-cache panel's comparison: how long a step takes when the decoder recomputes the whole prefix.

That time depends on the model, the source's length, the rows stepped (1, or a beam's width)
and the prefix's length, not on which tokens they are. So it is measured once per worker process
for each of those and kept: the first request of a length pays one uncached step per step, every
later one reads the table. Recomputing the prefix at every step of every student's request (what
`compare_cache` did before) cost a class most of its decoding time (docs/benchmarks.md).

A turn measures at most MEASURES_PER_TURN missing entries, so a class whose sources all have new
lengths does not stall a shared step; a step whose entry is not measured yet has no
`recompute_ms` (the chart leaves the point out). Runs in the compute thread only.
"""
from __future__ import annotations

import time
from collections import OrderedDict

import torch

from modelcore.checkpoint import LoadedModel
from modelcore.decoding import RecomputeStepper
from modelcore.tokenization import BOS_ID

MEASURES_PER_TURN = 4
MAX_STEPPERS = 32  # uncached decoders kept to extend their tables (the oldest is dropped)

Key = tuple[str, str, int, int]  # model path, checkpoint hash, source length, rows


class RecomputeTimes:
    """Milliseconds of one uncached step, per (model, source length, rows) and prefix length."""

    def __init__(self) -> None:
        self.ms: dict[Key, list[float]] = {}  # entry t: the step that feeds position t (<bos> is 0)
        self._steppers: OrderedDict[Key, RecomputeStepper] = OrderedDict()
        self.budget = MEASURES_PER_TURN

    def new_turn(self) -> None:
        self.budget = MEASURES_PER_TURN

    def step_ms(self, loaded: LoadedModel, src_ids: list[int], rows: int, step: int) -> float | None:
        """The time recomputing a prefix of step + 1 positions took here (measured now if it is next and the turn allows)."""
        key = (str(loaded.path), loaded.checkpoint_hash, len(src_ids), rows)
        table = self.ms.setdefault(key, [])
        while len(table) <= step and self.budget > 0:
            self.budget -= 1
            table.append(self._measure(key, loaded, src_ids, rows))
        return table[step] if step < len(table) else None

    def _measure(self, key: Key, loaded: LoadedModel, src_ids: list[int], rows: int) -> float:
        """Feed the key's uncached decoder one more position (any token: the time does not depend on it)."""
        stepper = self._steppers.get(key)
        if stepper is None:
            stepper = RecomputeStepper(loaded.model)
            with torch.inference_mode():
                stepper.add_sources([src_ids] * rows, loaded.config.max_len)
            self._steppers[key] = stepper
            while len(self._steppers) > MAX_STEPPERS:
                self._steppers.popitem(last=False)
        self._steppers.move_to_end(key)
        device = next(loaded.model.parameters()).device
        tokens = torch.full((rows,), BOS_ID, dtype=torch.long, device=device)
        started = time.perf_counter()
        with torch.inference_mode():
            stepper.step(tokens)
        ms = (time.perf_counter() - started) * 1000
        if stepper.lengths[0] >= loaded.config.max_len:  # nothing longer can be asked of this key
            self._steppers.pop(key, None)
        return ms
