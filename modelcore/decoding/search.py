"""Choosing tokens: sampling filters and the beam-search bookkeeping of one request."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from modelcore.decoding.confidence import StepStat
from modelcore.decoding.params import DecodeParams
from modelcore.tokenization import EOS_ID


def tempered(logits: Tensor, temperature: float) -> Tensor:
    """softmax(logits / temperature) of one row (V,), in float64, finite at every temperature > 0."""
    # Shifted so the most likely token sits at exactly 0: a tiny temperature sends the others to
    # -inf, never the top one (0 / t is 0), so the row keeps a 1 and cannot become NaN or sum to
    # 0. float64 because a float32 scalar turns a temperature under 1e-45 into 0 (and 0 / 0).
    shifted = logits.double() - logits.max()  # (V,), <= 0, -inf where banned
    return (shifted / temperature).softmax(-1)


def sample(probs: Tensor, top_k: int, top_p: float, generator: torch.Generator) -> int:
    """Draw one id from probs (V,) after keeping the top_k most likely and the smallest top_p mass."""
    if top_k and top_k < probs.numel():
        kth = probs.topk(top_k).values[-1]
        probs = probs.masked_fill(probs < kth, 0.0)
    if top_p < 1.0:
        sorted_probs, order = probs.sort(descending=True)
        mass_before = sorted_probs.cumsum(0) - sorted_probs  # mass of the strictly more likely tokens
        drop = mass_before >= top_p * sorted_probs.sum()
        drop[0] = False  # the most likely token always stays, however small top_p (or its product) is
        probs = probs.scatter(0, order[drop], 0.0)
    return int(torch.multinomial(probs, 1, generator=generator))


def length_penalty(length: int, alpha: float) -> float:
    """GNMT's ((5 + |Y|) / 6) ** alpha (Wu et al. 2016); |Y| counts the <eos>."""
    return ((5.0 + length) / 6.0) ** alpha


@dataclass
class BeamSearch:
    """Live beams and ended hypotheses of one request; advance() is one step."""

    params: DecodeParams
    max_len: int
    tokens: list[list[int]] = field(default_factory=lambda: [[]])  # per live beam, without <bos>
    logprobs: list[float] = field(default_factory=lambda: [0.0])
    finished: list[tuple[float, float, list[int]]] = field(default_factory=list)  # (score, logprob, ids)
    steps: list[list[StepStat]] = field(default_factory=lambda: [[]])  # per live beam: the model's own choices
    finished_steps: list[list[StepStat]] = field(default_factory=list)  # per finished hypothesis
    done: bool = False
    out_of_room: bool = False  # stopped at max_len rather than by the stopping rule

    def force(self, token: int, logp: Tensor) -> None:
        """Follow a forced token on every beam (there is one beam while the prefix lasts)."""
        values = logp[:, token].tolist()
        for i, value in enumerate(values):
            self.tokens[i].append(token)
            self.logprobs[i] += value

    def advance(
        self, logp: Tensor, spread: Sequence[tuple[float, float]] | None = None
    ) -> tuple[list[int], list[tuple[int, int, float, float]], list[int]]:
        """logp (beams, V) -> (parent rows to keep, new beams (parent, id, token logprob, total), ended).

        `spread`: each parent row's entropy and top-two margin, kept along each hypothesis for its confidence.
        """
        spread = spread if spread is not None else [(0.0, 1.0)] * logp.size(0)
        k, V = self.params.beam_size, logp.size(1)
        totals = logp + torch.tensor(self.logprobs, dtype=logp.dtype, device=logp.device)[:, None]
        top, flat = totals.view(-1).topk(min(2 * k, totals.numel()))
        token_logp = logp.view(-1)[flat].tolist()
        live: list[tuple[int, int, float, float]] = []
        ended: list[int] = []
        for rank, (total, index, tlp) in enumerate(zip(top.tolist(), flat.tolist(), token_logp, strict=True)):
            parent, token = divmod(index, V)
            if total == float("-inf"):
                break
            if token == EOS_ID:
                if rank < k:  # an ending counts only if it would have been kept as a beam
                    ids = self.tokens[parent] + [token]
                    self.finished.append((total / length_penalty(len(ids), self.params.length_penalty), total, ids))
                    self.finished_steps.append([*self.steps[parent], StepStat(tlp, *spread[parent])])
                    ended.append(len(self.finished) - 1)
                continue
            live.append((parent, token, tlp, total))
            if len(live) == k:
                break
        self.tokens = [self.tokens[p] + [t] for p, t, _, _ in live]
        self.steps = [[*self.steps[p], StepStat(tlp, *spread[p])] for p, _, tlp, _ in live]
        self.logprobs = [total for _, _, _, total in live]
        self._check_done()
        return [p for p, _, _, _ in live], live, ended

    def _check_done(self) -> None:
        """Stop when enough hypotheses ended (early_stop) or no live beam can beat them any more."""
        k, alpha = self.params.beam_size, self.params.length_penalty
        length = len(self.tokens[0]) if self.tokens else 0
        if not self.tokens or length >= self.max_len:
            self.done = self.out_of_room = True
            return
        if len(self.finished) < k:
            return
        if self.params.early_stop:
            self.done = True
            return
        worst_kept = sorted(s for s, _, _ in self.finished)[-k]
        # A live log-probability only falls; its best score is at the longest allowed length.
        best_live = max(self.logprobs) / length_penalty(self.max_len, alpha)
        self.done = best_live <= worst_kept

    def results(self) -> list[tuple[float, float, list[int], str, list[StepStat]]]:
        """The n_best hypotheses, best first: (score, logprob, ids without <eos>, "eos" | "max_len", steps)."""
        pool = [(s, lp, ids[:-1], "eos", st) for (s, lp, ids), st in zip(self.finished, self.finished_steps, strict=True)]
        if self.out_of_room:  # live beams stopped by max_len compete with the ended ones
            alpha = self.params.length_penalty
            pool += [
                (lp / length_penalty(len(ids), alpha), lp, ids, "max_len", st)
                for ids, lp, st in zip(self.tokens, self.logprobs, self.steps, strict=True)
            ]
        pool.sort(key=lambda h: -h[0])
        return pool[: self.params.n_best]
