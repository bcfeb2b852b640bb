"""The entry points: decode_stream (one request, event by event) and decode (many, results only)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from modelcore.checkpoint import CheckpointError, LoadedModel, load_model
from modelcore.decoding.batch import BatchDecoder
from modelcore.decoding.confidence import judge_for
from modelcore.decoding.events import DoneEvent, Event
from modelcore.decoding.params import DecodeError, DecodeParams
from modelcore.model import EncoderDecoder
from modelcore.tokenization import Tokenizer

ModelLike = EncoderDecoder | LoadedModel | str | Path


def open_decoder(
    model: ModelLike,
    *,
    src_tokenizer: Tokenizer | None = None,
    tgt_tokenizer: Tokenizer | None = None,
    cache: bool = True,
    step_events: bool = True,
) -> BatchDecoder:
    """A BatchDecoder for a model object, a loaded model folder, or a folder path / shipped model name.

    step_events=False: its steps return done events only (BatchDecoder's).
    """
    if isinstance(model, str | Path):
        try:
            model = load_model(model)
        except CheckpointError as error:
            raise DecodeError(f"unknown model: {error}", "unknown_model") from None
    judge = None
    if isinstance(model, LoadedModel):
        src_tokenizer = src_tokenizer or model.src_tokenizer
        tgt_tokenizer = tgt_tokenizer or model.tgt_tokenizer
        judge = judge_for(folder=model.path, checkpoint_hash=model.checkpoint_hash, metrics=model.metrics)
        model = model.model
    if not isinstance(model, EncoderDecoder):
        raise DecodeError(f"unknown model: expected an EncoderDecoder, a model folder or a name, got {model!r}", "unknown_model")
    return BatchDecoder(model, src_tokenizer=src_tokenizer, tgt_tokenizer=tgt_tokenizer, cache=cache, judge=judge,
                        step_events=step_events)


def decode_stream(
    model: ModelLike,
    src: str | Sequence[int],
    params: DecodeParams | None = None,
    *,
    src_tokenizer: Tokenizer | None = None,
    tgt_tokenizer: Tokenizer | None = None,
    cache: bool = True,
    request_id: str = "0",
) -> Iterator[Event]:
    """Decode one source, yielding a start event, one token (or beams) event per step, then done."""
    decoder = open_decoder(model, src_tokenizer=src_tokenizer, tgt_tokenizer=tgt_tokenizer, cache=cache)
    start = decoder.add(request_id, src, params)  # raises before the first yield on a bad request
    return _events(start, decoder)


def _events(start: Event, decoder: BatchDecoder) -> Iterator[Event]:
    yield start
    yield from decoder.run()


def decode(
    model: ModelLike,
    srcs: Sequence[str | Sequence[int]],
    params: DecodeParams | None = None,
    *,
    src_tokenizer: Tokenizer | None = None,
    tgt_tokenizer: Tokenizer | None = None,
    cache: bool = True,
) -> list[DoneEvent]:
    """Decode many sources together (one batch, each ending on its own); results in input order."""
    decoder = open_decoder(model, src_tokenizer=src_tokenizer, tgt_tokenizer=tgt_tokenizer, cache=cache,
                           step_events=False)  # only the done events are read
    decoder.add_many([(str(i), src, params) for i, src in enumerate(srcs)])
    results: dict[str, DoneEvent] = {}
    for event in decoder.run():
        if isinstance(event, DoneEvent):
            results[event.request_id] = event
    return [results[str(i)] for i in range(len(srcs))]
