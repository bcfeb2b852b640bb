"""What one decoding request asks for (DecodeParams), checked up front."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

STRATEGIES = ("greedy", "beam", "sample")


class DecodeError(ValueError):
    """A decoding request that cannot run; `code` says why, for a caller to map onto its own words.

    Codes: bad_params (the parameters), empty_source, source_too_long, bad_source (ids outside the
    vocabulary, no tokenizer for a text), bad_request (request ids), unknown_model.
    """

    def __init__(self, message: str, code: str = "bad_params") -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class DecodeParams:
    """Strategy and limits of one request; every field is validated on construction."""

    strategy: str = "greedy"
    # Target tokens generated at most (the forced prefix counts); None: twice the source plus 10.
    max_len: int | None = None
    # <eos> is not allowed before this many tokens (benchmarks use it to decode an exact length).
    min_len: int = 0
    beam_size: int = 4
    # GNMT's alpha in ((5 + |Y|) / 6) ** alpha; 0 ranks hypotheses by raw log-probability.
    length_penalty: float = 0.6
    # True: stop once beam_size hypotheses have ended; False: go on while a live beam could still win.
    early_stop: bool = True
    n_best: int = 1
    temperature: float = 1.0
    top_k: int = 0  # 0: no top-k filter
    top_p: float = 1.0  # 1.0: no nucleus filter
    seed: int | None = None  # sampling only; None draws a fresh seed
    # Target ids the decoder is made to emit first ("what if the model had said X").
    forced_prefix: tuple[int, ...] | None = None
    top_alternatives: int = 5  # alternatives listed in each token event
    capture_attention: bool = False

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise DecodeError(f"strategy must be one of {', '.join(STRATEGIES)}, got {_shown(self.strategy)}")
        if self.max_len is not None:
            _require_int("max_len", self.max_len, 1)
        _require_int("min_len", self.min_len, 0)
        if self.max_len is not None and self.min_len > self.max_len:
            raise DecodeError(f"min_len ({self.min_len}) is more than max_len ({self.max_len})")
        _require_int("beam_size", self.beam_size, 1)
        _require_int("n_best", self.n_best, 1)
        if self.strategy == "beam" and self.n_best > self.beam_size:
            raise DecodeError(f"n_best ({self.n_best}) cannot exceed beam_size ({self.beam_size})")
        if self.strategy != "beam" and self.n_best != 1:
            raise DecodeError("n_best > 1 needs strategy 'beam'")
        _require_number("length_penalty", self.length_penalty, 0.0, 10.0)
        _require_number("temperature", self.temperature, 0.0, math.inf, open_low=True)
        _require_int("top_k", self.top_k, 0)
        _require_number("top_p", self.top_p, 0.0, 1.0, open_low=True)
        if self.seed is not None:
            _require_int("seed", self.seed, 0)
        _require_int("top_alternatives", self.top_alternatives, 0)
        for name in ("early_stop", "capture_attention"):
            if not isinstance(getattr(self, name), bool):
                raise DecodeError(f"{name} must be true or false, got {_shown(getattr(self, name))}")
        if self.forced_prefix is not None:
            prefix = tuple(self.forced_prefix)
            for token in prefix:
                _require_int("forced_prefix id", token, 0)
            object.__setattr__(self, "forced_prefix", prefix)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields."""
        data = asdict(self)
        data["forced_prefix"] = list(self.forced_prefix) if self.forced_prefix is not None else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DecodeParams:
        """Build from JSON-like data (a WebSocket frame); unknown keys are an error."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise DecodeError(f"unknown decoding parameters: {', '.join(unknown)}")
        fields = dict(data)
        if isinstance(fields.get("forced_prefix"), Sequence) and not isinstance(fields["forced_prefix"], str):
            fields["forced_prefix"] = tuple(fields["forced_prefix"])
        return cls(**fields)

    def resolved_max_len(self, src_len: int, model_max_len: int) -> int:
        """The step limit for a source of src_len tokens, within the model's positional table.

        Without max_len: twice the source plus 10, cut to the table; a max_len (or a forced prefix,
        or a min_len) the table cannot hold is an error.
        """
        wanted = max(self._wanted(src_len), len(self.forced_prefix or ()), self.min_len)
        limit = positions_limit(model_max_len)
        if wanted > limit and self.max_len is not None:
            raise DecodeError(f"max_len {wanted} exceeds what the model's positions allow ({limit})")
        return min(wanted, limit)

    def capped(self, src_len: int, model_max_len: int, max_tokens: int) -> DecodeParams:
        """These parameters with max_len fixed for one source, never past the model's positions or max_tokens.

        What a server does with any request: a max_len too large is cut rather than refused, and
        min_len is cut to fit under it.
        """
        max_len = max(1, min(self._wanted(src_len), max_tokens, positions_limit(model_max_len)))
        return replace(self, max_len=max_len, min_len=min(self.min_len, max_len))

    def _wanted(self, src_len: int) -> int:
        """The limit asked for: max_len, or room for a target twice the source plus a margin."""
        return self.max_len if self.max_len is not None else 2 * src_len + 10


def positions_limit(model_max_len: int) -> int:
    """Target tokens a model with model_max_len positions can generate: position 0 holds <bos>."""
    return model_max_len - 1


def _require_int(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise DecodeError(f"{name} must be an integer >= {minimum}, got {_shown(value)}")


def _require_number(name: str, value: object, low: float, high: float, open_low: bool = False) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = (value > low if open_low else value >= low) and value <= high
    if not ok:
        bracket = "(" if open_low else "["
        raise DecodeError(f"{name} must be in {bracket}{low:g}, {high:g}], got {_shown(value)}")


def _shown(value: object) -> str:
    """A refused value as a message quotes it: short, whatever a client sent."""
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"
