"""Decoding with a KV cache: greedy, beam search and sampling, streamed step by step, batched continuously.

    from modelcore.decoding import DecodeParams, decode_stream
    for event in decode_stream(model, src_ids, DecodeParams(strategy="beam", beam_size=4)):
        print(event.to_json())
"""

from __future__ import annotations

from modelcore.decoding.batch import BatchDecoder
from modelcore.decoding.cache import CacheInfo, KVCache
from modelcore.decoding.events import (
    Beam,
    BeamsEvent,
    DoneEvent,
    Event,
    Hypothesis,
    StartEvent,
    TokenEvent,
)
from modelcore.decoding.params import STRATEGIES, DecodeError, DecodeParams
from modelcore.decoding.steppers import CachedStepper, RecomputeStepper, make_stepper
from modelcore.decoding.stream import decode, decode_stream, open_decoder

__all__ = [
    "STRATEGIES",
    "BatchDecoder",
    "Beam",
    "BeamsEvent",
    "CacheInfo",
    "CachedStepper",
    "DecodeError",
    "DecodeParams",
    "DoneEvent",
    "Event",
    "Hypothesis",
    "KVCache",
    "RecomputeStepper",
    "StartEvent",
    "TokenEvent",
    "decode",
    "decode_stream",
    "make_stepper",
    "open_decoder",
]
