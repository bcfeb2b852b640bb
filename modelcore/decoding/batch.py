"""Continuous batching: many requests decoded together, each joining and leaving between steps.

Every request owns a contiguous block of rows in the stepper (one row, or one per beam).
A step feeds every row at once; then each request picks its tokens with its own strategy,
and the rows that go on (finished and cancelled requests dropped, beams reordered) are
selected for the next step.
"""

from __future__ import annotations

import functools
import math
import secrets
import time
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from types import ModuleType

import torch
from torch import Tensor

from modelcore.decoding.confidence import Judge, Judgement, StepStat
from modelcore.decoding.events import (
    Alternative,
    Beam,
    BeamsEvent,
    DoneEvent,
    Event,
    Hypothesis,
    StartEvent,
    TokenEvent,
)
from modelcore.decoding.params import DecodeError, DecodeParams
from modelcore.decoding.search import BeamSearch, sample, tempered
from modelcore.decoding.steppers import Stepper, make_stepper
from modelcore.model import EncoderDecoder
from modelcore.tokenization import BOS_ID, EOS_ID, PAD_ID, SourceError, Tokenizer, check_source

_vocabularies: weakref.WeakKeyDictionary[Tokenizer, list[str]] = weakref.WeakKeyDictionary()


def _vocabulary(tokenizer: Tokenizer | None, size: int) -> list[str | None]:
    """Token text of every id, looked up once per tokenizer."""
    if tokenizer is None:
        return [None] * size
    if tokenizer not in _vocabularies:
        _vocabularies[tokenizer] = [tokenizer.id_to_token(i) for i in range(size)]
    return list(_vocabularies[tokenizer])


Scores = tuple[Tensor, list[list[float]], list[list[int]], list[float]]
_BANNED = (PAD_ID, BOS_ID)  # framing, never output


def step_scores(logits: Tensor, short_rows: list[int], width: int, entropy: bool, native: ModuleType | None = None
                ) -> Scores:
    """What a step's choices read from its logits (B, V): (log-probabilities (B, V), each row's `width` most likely
    log-probabilities and ids, best first, and each row's entropy when asked, else []).

    The banned ids go to -inf in `logits` first (in place), <eos> too in `short_rows` (requests short of their
    min_len). `native`: the native step's module, which does it all in one call through the same ATen kernels
    as the Python below, so that every number is the same, bit for bit.
    """
    if native is not None:
        return native.scores(logits, _BANNED, EOS_ID, short_rows, width, entropy)
    if len(short_rows) == logits.size(0):  # one fill for the common case: no row may end yet
        logits.index_fill_(1, _banned_ids(logits.device, True), float("-inf"))
    else:
        logits.index_fill_(1, _banned_ids(logits.device, False), float("-inf"))
        if short_rows:
            logits[short_rows, EOS_ID] = float("-inf")
    logp = logits.log_softmax(-1)
    top_logp, top_ids = (t.tolist() for t in logp.topk(width))
    entropies = torch.special.entr(logp.exp()).sum(-1).tolist() if entropy else []  # entr(0) is 0: banned ids
    return logp, top_logp, top_ids, entropies


@functools.cache
def _banned_ids(device: torch.device, eos: bool) -> Tensor:
    return torch.tensor([*_BANNED, EOS_ID] if eos else _BANNED, device=device)


def _spread(entropy: list[float], top_logp: list[list[float]], row: int) -> tuple[float, float]:
    """A row's (entropy, margin) this step, which the output's confidence reads: the margin is the gap between its
    two most likely tokens' probabilities. (0, 0) when no entropy was taken (every token forced: none is read)."""
    if not entropy:
        return 0.0, 0.0
    lps = top_logp[row]
    return entropy[row], math.exp(lps[0]) - (math.exp(lps[1]) if len(lps) > 1 else 0.0)


class StepFailed(RuntimeError):
    """Requests whose own choice of token failed in a step: they have left the batch; `events` has the others'."""

    def __init__(self, failed: dict[str, Exception], events: list[Event]) -> None:
        super().__init__("; ".join(f"request {rid!r}: {error!r}" for rid, error in failed.items()))
        self.failed = failed
        self.events = events


@dataclass
class _Request:
    """One request's progress."""

    id: str
    params: DecodeParams
    src: list[int]
    max_len: int
    started: float
    encode_ms: float
    rows: int = 1
    step: int = 0
    ids: list[int] = field(default_factory=list)
    logprob: float = 0.0
    feed: list[int] = field(default_factory=lambda: [BOS_ID])  # next step's input token, per row
    generator: torch.Generator | None = None
    beam: BeamSearch | None = None
    text: str | None = None  # the source as typed (its words are checked against the training words)
    steps_seen: list[StepStat] = field(default_factory=list)  # greedy, sampling: the model's own choices

    def forced_token(self) -> int | None:
        prefix = self.params.forced_prefix or ()
        return prefix[self.step] if self.step < len(prefix) else None


class BatchDecoder:
    """Decodes many requests at once; add() and cancel() may be called between any two steps."""

    def __init__(
        self,
        model: EncoderDecoder,
        *,
        src_tokenizer: Tokenizer | None = None,
        tgt_tokenizer: Tokenizer | None = None,
        cache: bool = True,
        stepper: Stepper | None = None,
        judge: Judge | None = None,
        step_events: bool = True,
    ) -> None:
        self.model = model
        # What each done event says of its output; the default: uncalibrated, no training words to check.
        self.judge = judge if judge is not None else Judge()
        self.config = model.config
        self.src_tokenizer, self.tgt_tokenizer = src_tokenizer, tgt_tokenizer
        # The rows' decoder state; None: make_stepper's (the cached or, with cache=False, the recompute one).
        self.stepper: Stepper = stepper if stepper is not None else make_stepper(model, cache=cache)
        self.device = next(model.parameters()).device
        self._vocab = _vocabulary(tgt_tokenizer, self.config.tgt_vocab_size)
        # False: step() returns done events only (decode() reads no others), and builds no token or beams events.
        self.step_events = step_events
        # Where the native step runs, its module also takes the logits' handling of a step (_scores).
        self._native: ModuleType | None = getattr(self.stepper, "native_module", None)
        self._requests: list[_Request] = []

    @property
    def active(self) -> list[str]:
        """Ids of the requests still decoding, in row order."""
        return [r.id for r in self._requests]

    # -- joining and leaving ----------------------------------------------------------------------

    def add(
        self, request_id: str, src: str | Sequence[int], params: DecodeParams | None = None, *, text: str | None = None
    ) -> StartEvent:
        """Accept one request (encoded now); it takes part from the next step on."""
        return self.add_many([(request_id, src, params)], texts=[text])[0]

    def add_many(
        self, requests: Sequence[tuple[str, str | Sequence[int], DecodeParams | None]],
        *, texts: Sequence[str | None] | None = None,
    ) -> list[StartEvent]:
        """Accept several requests with one encoder call.

        `texts`: the typed source of each request given as ids, whose words the done event checks (a text source
        is its own).
        """
        ids = [r[0] for r in requests]
        taken = set(self.active)
        if len(set(ids)) != len(ids) or taken & set(ids):
            raise DecodeError("request ids must be unique among active requests", "bad_request")
        checked = [(rid, self._source_ids(src), params or DecodeParams()) for rid, src, params in requests]
        for _, _, params in checked:
            self._check_prefix(params)
        started = time.perf_counter()
        limits = [p.resolved_max_len(len(s), self.config.max_len) for _, s, p in checked]
        beam_rows = sum(p.beam_size if p.strategy == "beam" else 1 for _, _, p in checked)
        capture = any(p.capture_attention for _, _, p in checked)
        with torch.inference_mode():
            self.stepper.reserve(self.stepper.rows + beam_rows, max(limits))
            encoder_attention = self.stepper.add_sources([s for _, s, _ in checked], max(limits), capture)
        encode_ms = (time.perf_counter() - started) * 1000
        events = []
        for i, ((rid, src, params), limit) in enumerate(zip(checked, limits, strict=True)):
            request = _Request(rid, params, src, limit, started, encode_ms)
            typed = requests[i][1]
            request.text = typed if isinstance(typed, str) else (texts[i] if texts is not None else None)
            if params.strategy == "sample":
                if params.seed is None:  # drawn here and reported in the start event, so a run can be replayed
                    params = request.params = replace(params, seed=secrets.randbits(63))
                assert params.seed is not None
                request.generator = torch.Generator(device=self.device).manual_seed(params.seed)
            if params.strategy == "beam":
                request.beam = BeamSearch(params, limit)
            self._requests.append(request)
            attention = None
            if encoder_attention is not None and params.capture_attention:
                attention = torch.stack([a[i, :, : len(src), : len(src)] for a in encoder_attention])
            src_tokens = [self.src_tokenizer.id_to_token(t) for t in src] if self.src_tokenizer else None
            events.append(StartEvent(rid, src, src_tokens, params.to_dict(), limit, attention))
        return events

    def cancel(self, request_id: str) -> DoneEvent:
        """Stop a request now; its rows leave the batch before the next step."""
        for position, request in enumerate(self._requests):
            if request.id == request_id:
                first = sum(r.rows for r in self._requests[:position])
                keep = [i for i in range(self.stepper.rows) if not first <= i < first + request.rows]
                del self._requests[position]
                with torch.inference_mode():
                    self.stepper.select(keep)
                return self._done(request, "cancelled")
        raise DecodeError(f"no active request {request_id!r}", "bad_request")

    def _source_ids(self, src: str | Sequence[int]) -> list[int]:
        """Ids as the model saw them in training: a text's ids then <eos>; an id list is taken as it is."""
        try:
            if isinstance(src, str):
                if self.src_tokenizer is None:
                    raise DecodeError("a text source needs the model's source tokenizer", "bad_source")
                return self.src_tokenizer.source_ids(src, self.config.max_len)
            ids = check_source([int(i) for i in src], self.config.max_len)
        except SourceError as error:
            raise DecodeError(str(error), error.code) from None
        if min(ids) < 0 or max(ids) >= self.config.src_vocab_size:
            raise DecodeError(f"source ids must be in [0, {self.config.src_vocab_size})", "bad_source")
        return ids

    def _check_prefix(self, params: DecodeParams) -> None:
        for token in params.forced_prefix or ():
            if token in (PAD_ID, BOS_ID, EOS_ID) or token >= self.config.tgt_vocab_size:
                raise DecodeError(f"forced_prefix id {token} is not an output token of this model")

    # -- stepping ----------------------------------------------------------------------------------

    def run(self) -> Iterator[Event]:
        """Step until every request is done, yielding each step's events."""
        while self._requests:
            yield from self.step()

    def step(self) -> list[Event]:
        """One decoding step for every active request; returns their token/beams and done events (done events only
        when the decoder was made with step_events=False)."""
        if not self._requests:
            return []
        with torch.inference_mode():
            return self._step()

    def _step(self) -> list[Event]:
        requests = self._requests
        stepper = self.stepper
        stepper.capture = any(r.params.capture_attention for r in requests)
        logits = stepper.step([t for r in requests for t in r.feed])  # (B, V)
        logp, top_logp, top_ids, entropy = self._scores(logits, requests)
        events: list[Event] = []
        reporting = self.step_events
        keep: list[int] = []
        still: list[_Request] = []
        failed: dict[str, Exception] = {}
        row = 0
        for r in requests:
            rows = r.rows
            mark = len(events)
            try:
                if r.beam is not None:
                    spread = [_spread(entropy, top_logp, i) for i in range(row, row + rows)]
                    parents, done = self._beam_step(r, logp[row : row + rows], range(row, row + rows),
                                                    events if reporting else None, spread)
                else:
                    parents = [0]
                    done = self._token_step(r, logits, logp, top_ids[row], top_logp[row], row,
                                            events if reporting else None, _spread(entropy, top_logp, row))
            except Exception as error:  # that request leaves the batch; the others' step stands
                del events[mark:]
                failed[r.id] = error
                row += rows
                continue
            r.step += 1
            if done is None:
                keep += [row + p for p in parents]
                r.rows = len(parents)
                still.append(r)
            else:
                events.append(self._done(r, done))
            row += rows
        self._requests = still
        stepper.select(keep)
        if failed:
            raise StepFailed(failed, events)
        return events

    def _scores(self, logits: Tensor, requests: list[_Request]) -> Scores:
        """step_scores() of this step: at least the top two of each row (their gap is the step's margin, which the
        output's confidence reads), the entropy when a request chooses its own token."""
        width = min(max([r.params.top_alternatives for r in requests] + [2]), logits.size(1))
        short_rows, row = [], 0
        for r in requests:
            if r.step < r.params.min_len:
                short_rows += range(row, row + r.rows)
            row += r.rows
        chooses = any(r.forced_token() is None for r in requests)
        return step_scores(logits, short_rows, width, chooses, self._native)

    def _attention(self, r: _Request, row: int) -> tuple[Tensor | None, Tensor | None]:
        """This step's attention rows of one stepper row, if its request asked: (L, h, T) self, (L, h, S) cross."""
        attention = self.stepper.attention if self.stepper.capture and r.params.capture_attention else None
        if attention is None:
            return None, None
        T, S = self.stepper.lengths[row], self.stepper.src_lengths[row]
        return attention[0][:, row, :, :T], attention[1][:, row, :, :S]

    def _token_step(
        self, r: _Request, logits: Tensor, logp: Tensor, ids: list[int], lps: list[float], row: int,
        events: list[Event] | None, spread: tuple[float, float],
    ) -> str | None:
        """Greedy or sampling on logits[row] (`ids`, `lps`: its most likely tokens): pick one token, report it in
        `events` (None: not reported); returns the reason it is done, or None."""
        params, forced = r.params, r.forced_token()
        if params.strategy == "sample":
            probs = tempered(logits[row], params.temperature)  # (V,), float64
            assert r.generator is not None
            token = forced if forced is not None else sample(probs, params.top_k, params.top_p, r.generator)
            token_logp = float(logp[row, token])
        else:
            probs = None
            token = forced if forced is not None else ids[0]
            token_logp = lps[0] if forced is None else float(logp[row, token])
        if events is not None:
            events.append(self._token_event(r, row, token, token_logp, forced is not None, probs, ids, lps))
        r.logprob += token_logp
        if forced is None:
            r.steps_seen.append(StepStat(token_logp, *spread))
        r.feed = [token]
        if token == EOS_ID:
            return "eos"
        r.ids.append(token)
        if r.step + 1 >= r.max_len:
            return "max_len"
        return None

    def _token_event(
        self, r: _Request, row: int, token: int, token_logp: float, forced: bool, probs: Tensor | None,
        ids: list[int], lps: list[float],
    ) -> TokenEvent:
        """The token event of one greedy (`probs` None) or sampling step (`probs`: the tempered distribution)."""
        width = min(r.params.top_alternatives, len(self._vocab))  # the vocabulary: one text (or None) an id
        if probs is not None:
            prob = float(probs[token])
            top = probs.topk(width) if width else None
            alternatives: list[Alternative] = (
                [(i, self._vocab[i], p) for i, p in zip(top.indices.tolist(), top.values.tolist(), strict=True)]
                if top is not None else []
            )
        else:
            prob = math.exp(token_logp)
            alternatives = [(i, self._vocab[i], math.exp(lp)) for i, lp in zip(ids[:width], lps[:width], strict=True)]
        self_att, cross_att = self._attention(r, row)
        return TokenEvent(r.id, r.step, token, self._vocab[token], prob, forced, alternatives, self.stepper.info([row]),
                          self_att, cross_att)

    def _beam_step(
        self, r: _Request, logp: Tensor, rows: range, events: list[Event] | None, spread: list[tuple[float, float]]
    ) -> tuple[list[int], str | None]:
        """Beam search: extend, prune, report the beams in `events` (None: not reported); returns (parent rows to
        keep, reason when done)."""
        assert r.beam is not None
        forced = r.forced_token()
        ended: list[int] = []
        if forced is not None:
            r.beam.force(forced, logp)
            token_logps = logp[:, forced].tolist()
            live = [(p, forced, lp, total) for p, (lp, total) in enumerate(zip(token_logps, r.beam.logprobs, strict=True))]
            r.beam.done = r.beam.out_of_room = len(r.beam.tokens[0]) >= r.max_len
        else:
            _, live, ended = r.beam.advance(logp, spread)
        if events is not None:
            beams = []
            for parent, token, token_logp, total in live:
                self_att, cross_att = self._attention(r, rows[parent])
                beams.append(Beam(parent, token, self._vocab[token], math.exp(token_logp), total, self_att, cross_att))
            finished = [self._hypothesis(*r.beam.finished[i][:3]) for i in ended]
            events.append(BeamsEvent(r.id, r.step, beams, finished, forced is not None, self.stepper.info(rows)))
        r.feed = [token for _, token, _, _ in live]
        if r.beam.done:
            return [], "beam"
        return [p for p, _, _, _ in live], None

    def _hypothesis(self, score: float, logprob: float, ids: list[int]) -> Hypothesis:
        ids = [i for i in ids if i != EOS_ID]
        text = self.tgt_tokenizer.decode(ids) if self.tgt_tokenizer else None
        return Hypothesis(ids, text, logprob, score)

    def _done(self, r: _Request, reason: str) -> DoneEvent:
        decode_ms = (time.perf_counter() - r.started) * 1000 - r.encode_ms
        if r.beam is not None and reason == "beam":
            results = r.beam.results()
            n_best = [self._hypothesis(score, lp, ids) for score, lp, ids, _, _ in results]
            reason, steps, best = results[0][3], results[0][4], n_best[0]
            return DoneEvent(r.id, best.ids, best.text, r.step, reason, best.logprob, n_best, r.encode_ms, decode_ms,
                             self._judgement(r, best.ids, steps, reason))
        if r.beam is not None:  # cancelled mid-search: the best live beam so far
            r.ids, r.logprob = r.beam.tokens[0], r.beam.logprobs[0]
        hypothesis = self._hypothesis(r.logprob, r.logprob, r.ids)
        return DoneEvent(
            r.id, hypothesis.ids, hypothesis.text, r.step, reason, r.logprob, [hypothesis], r.encode_ms, decode_ms,
            self._judgement(r, hypothesis.ids, r.steps_seen, reason),
        )

    def _judgement(self, r: _Request, ids: list[int], steps: list[StepStat], reason: str) -> Judgement | None:
        """How far to trust a finished output; a cancelled one is not finished, and gets none."""
        if reason == "cancelled":
            return None
        text = self.tgt_tokenizer.decode(ids) if self.tgt_tokenizer else None
        return self.judge.judge(steps=steps, ids=ids, reason=reason, src_len=len(r.src), source=r.text, text=text)
