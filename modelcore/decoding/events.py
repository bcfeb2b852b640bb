"""What decoding reports, one event at a time: start, token (or beams) per step, done.

Events hold tensors as computed; to_dict() turns them into plain Python (floats keep every
bit: a float32 widens exactly to a Python float, and json writes floats so that they read
back equal), or leaves the attention out (`attention=False`) for a caller that sends it its own way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from torch import Tensor

from modelcore.decoding.cache import CacheInfo
from modelcore.decoding.confidence import Judgement

Alternative = tuple[int, str | None, float]  # id, token text, probability


def _attention_dict(self_rows: Tensor | None, cross_rows: Tensor | None) -> dict[str, Any] | None:
    """(L, h, T) and (L, h, S) -> {"self": [layer][head][position], "cross": ...}."""
    if self_rows is None or cross_rows is None:
        return None
    return {"self": self_rows.tolist(), "cross": cross_rows.tolist()}


class Event:
    """Base: every event has a type and turns into JSON."""

    type: str = ""

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_json(self) -> str:
        """One line of JSON (non-ASCII text kept as is)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, allow_nan=False)


@dataclass
class StartEvent(Event):
    """A request was accepted and its source encoded."""

    request_id: str
    src_ids: list[int]
    src_tokens: list[str] | None
    params: dict[str, Any]
    max_len: int
    encoder_attention: Tensor | None = None  # (L, h, S, S) when capturing
    type: str = field(default="start", init=False)

    def to_dict(self, attention: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": self.type,
            "request_id": self.request_id,
            "src_ids": self.src_ids,
            "src_tokens": self.src_tokens,
            "params": self.params,
            "max_len": self.max_len,
        }
        if attention and self.encoder_attention is not None:
            data["encoder_attention"] = self.encoder_attention.tolist()
        return data


@dataclass
class TokenEvent(Event):
    """One decoding step of a greedy or sampling request: the token chosen and what else was likely."""

    request_id: str
    seq: int  # step index, from 0: a client sees from it that nothing was lost
    id: int
    token: str | None
    prob: float  # of the chosen token (sampling: after temperature, before top-k/top-p)
    forced: bool  # the token came from forced_prefix, not from the model's choice
    alternatives: list[Alternative]  # the most probable tokens, best first
    cache: CacheInfo
    self_attention: Tensor | None = None  # (L, h, T): this step's query over the prefix, <bos> included
    cross_attention: Tensor | None = None  # (L, h, S): this step's query over the source
    type: str = field(default="token", init=False)

    def to_dict(self, attention: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": self.type,
            "request_id": self.request_id,
            "seq": self.seq,
            "id": self.id,
            "token": self.token,
            "prob": self.prob,
            "forced": self.forced,
            "alternatives": [{"id": i, "token": t, "prob": p} for i, t, p in self.alternatives],
            "cache": self.cache.to_dict(),
        }
        rows = _attention_dict(self.self_attention, self.cross_attention) if attention else None
        if rows is not None:
            data["attention"] = rows
        return data


@dataclass
class Beam:
    """One live hypothesis after a beam-search step."""

    parent: int  # index of the beam it extends, in the previous step's list
    id: int  # the token it just added
    token: str | None
    prob: float  # of that token given the parent
    logprob: float  # of the whole hypothesis so far
    self_attention: Tensor | None = None  # (L, h, T), the parent's row this step
    cross_attention: Tensor | None = None  # (L, h, S)

    def to_dict(self, attention: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "parent": self.parent,
            "id": self.id,
            "token": self.token,
            "prob": self.prob,
            "logprob": self.logprob,
        }
        rows = _attention_dict(self.self_attention, self.cross_attention) if attention else None
        if rows is not None:
            data["attention"] = rows
        return data


@dataclass
class Hypothesis:
    """A finished hypothesis (ended with <eos> or at max_len)."""

    ids: list[int]
    text: str | None
    logprob: float
    score: float  # logprob / length penalty: what beam search ranks by

    def to_dict(self) -> dict[str, Any]:
        return {"ids": self.ids, "text": self.text, "logprob": self.logprob, "score": self.score}


@dataclass
class BeamsEvent(Event):
    """One beam-search step: the live beams (for a beam-tree view) and hypotheses that ended."""

    request_id: str
    seq: int
    beams: list[Beam]
    finished: list[Hypothesis]  # ended at this step, parent beams included in ids
    forced: bool
    cache: CacheInfo
    type: str = field(default="beams", init=False)

    def to_dict(self, attention: bool = True) -> dict[str, Any]:
        return {
            "type": self.type,
            "request_id": self.request_id,
            "seq": self.seq,
            "beams": [b.to_dict(attention) for b in self.beams],
            "finished": [h.to_dict() for h in self.finished],
            "forced": self.forced,
            "cache": self.cache.to_dict(),
        }


@dataclass
class DoneEvent(Event):
    """A request ended: its text, why it stopped, and how long it took."""

    request_id: str
    ids: list[int]
    text: str | None
    steps: int
    reason: str  # "eos" | "max_len" | "cancelled"
    logprob: float
    n_best: list[Hypothesis]  # beam search: best first; others: the one output
    encode_ms: float
    decode_ms: float
    judgement: Judgement | None = None  # how far to trust the output; None when cancelled
    type: str = field(default="done", init=False)

    def to_dict(self) -> dict[str, Any]:
        judged = self.judgement.to_dict() if self.judgement is not None else {
            "confidence": None, "warnings": [], "unknown_words": [], "confidence_threshold": None, "calibrated": False,
            "coverage": None}
        return {
            "type": self.type,
            "request_id": self.request_id,
            "ids": self.ids,
            "text": self.text,
            "steps": self.steps,
            "reason": self.reason,
            "logprob": self.logprob,
            "n_best": [h.to_dict() for h in self.n_best],
            "timings": {"encode_ms": self.encode_ms, "decode_ms": self.decode_ms},
            **judged,
        }
