"""Decoding with a KV cache: greedy, beam search and sampling, streamed step by step, batched continuously.

    from modelcore.decoding import DecodeParams, decode_stream
    for event in decode_stream(model, src_ids, DecodeParams(strategy="beam", beam_size=4)):
        print(event.to_json())

The names load on first use (modelcore._lazy): `modelcore.decoding.params` alone loads no torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from modelcore._lazy import lazy_exports

if TYPE_CHECKING:
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
    from modelcore.decoding.steppers import CachedStepper, RecomputeStepper, Stepper, make_stepper
    from modelcore.decoding.stream import decode, decode_stream, open_decoder

_EXPORTS = {
    "BatchDecoder": "modelcore.decoding.batch",
    "CacheInfo": "modelcore.decoding.cache",
    "KVCache": "modelcore.decoding.cache",
    **dict.fromkeys(
        ["Beam", "BeamsEvent", "DoneEvent", "Event", "Hypothesis", "StartEvent", "TokenEvent"], "modelcore.decoding.events"
    ),
    **dict.fromkeys(["STRATEGIES", "DecodeError", "DecodeParams"], "modelcore.decoding.params"),
    **dict.fromkeys(["CachedStepper", "RecomputeStepper", "Stepper", "make_stepper"], "modelcore.decoding.steppers"),
    **dict.fromkeys(["decode", "decode_stream", "open_decoder"], "modelcore.decoding.stream"),
}
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

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
    "Stepper",
    "TokenEvent",
    "decode",
    "decode_stream",
    "make_stepper",
    "open_decoder",
]
