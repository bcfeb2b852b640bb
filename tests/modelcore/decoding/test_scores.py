"""A step's logits handled in one native call (issue 49), and decode() building no step events: the same numbers.

Where the native step runs, BatchDecoder hands it the logits' handling too (batch.step_scores: the bans, the
log-probabilities, each row's most likely tokens and its entropy); without it, the same ATen calls run from Python.
Both must give the same numbers bit for bit, so that a token event or a choice never depends on which one ran.
decode() reads only the done events, and its decoder builds no others; its results are those of a decoder that does.
"""

from __future__ import annotations

import math

import pytest
import torch

from modelcore.decoding import BatchDecoder, CachedStepper, DecodeParams, DoneEvent, decode
from modelcore.decoding.batch import step_scores
from modelcore.decoding.native import native_step
from modelcore.tokenization import BOS_ID, EOS_ID, PAD_ID
from tests.fixtures.decoding import SRC, tiny_model

SOURCES = [SRC, [3, 4], [9, 8, 7, 6, 5, 4, 3, 2, 1, 33, 12], [21, 22, 23]]


def logits_of(rows: int, vocabulary: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(rows, vocabulary, generator=generator) * 4
    logits[0, 7] = logits[0, 9] = logits[0].max() + 1  # a tie at the top of the first row
    return logits


@pytest.mark.parametrize(("rows", "vocabulary"), [(1, 50), (3, 50), (16, 1000)])
@pytest.mark.parametrize("width", [2, 5, "all"])
@pytest.mark.parametrize("short", ["none", "some", "all"])
@pytest.mark.parametrize("entropy", [True, False])
def test_the_native_scores_are_the_python_ones_bit_for_bit(
    rows: int, vocabulary: int, width: int | str, short: str, entropy: bool,
) -> None:
    module = native_step()
    assert module is not None, "the native step is built by make setup"
    short_rows = {"none": [], "some": list(range(0, rows, 2)), "all": list(range(rows))}[short]
    k = vocabulary if width == "all" else int(width)  # "all": the banned ids' -inf tie at the end
    logits = logits_of(rows, vocabulary, seed=rows + k)
    python_logits, native_logits = logits.clone(), logits.clone()
    with torch.inference_mode():
        python = step_scores(python_logits, short_rows, k, entropy)
        native = step_scores(native_logits, short_rows, k, entropy, module)
    assert torch.equal(native_logits, python_logits)  # the same ids banned, in place
    assert python_logits[:, [PAD_ID, BOS_ID]].eq(-math.inf).all()
    assert python_logits[:, EOS_ID].eq(-math.inf).tolist() == [r in short_rows for r in range(rows)]
    assert torch.equal(native[0], python[0])  # log-probabilities
    assert native[1:] == python[1:]  # top log-probabilities, their ids, entropies: Python floats, compared exactly
    assert [len(r) for r in native[1]] == [k] * rows
    assert len(native[3]) == (rows if entropy else 0)


def events_of(model, stepper, requests, *, native_scores: bool, step_events: bool = True):  # type: ignore[no-untyped-def]
    decoder = BatchDecoder(model, stepper=stepper, step_events=step_events)
    if not native_scores:
        decoder._native = None  # the Python handling of the logits, on the same native step
    decoder.add_many([(str(i), src, p) for i, (src, p) in enumerate(requests)])
    return [e.to_dict() for e in decoder.run()]


def requests_of_every_kind() -> list[tuple[list[int], DecodeParams]]:
    params = [
        DecodeParams(max_len=14, top_alternatives=12),
        DecodeParams(strategy="beam", beam_size=3, n_best=2, max_len=14, forced_prefix=(8,)),
        DecodeParams(strategy="sample", seed=5, max_len=14, min_len=6),
        DecodeParams(max_len=9, forced_prefix=(11, 12), capture_attention=True, top_alternatives=0),
    ]
    return list(zip(SOURCES, params, strict=True))


def without_timings(frames: list[dict]) -> list[dict]:  # type: ignore[type-arg]
    return [{k: v for k, v in f.items() if k != "timings"} for f in frames]


@pytest.mark.parametrize("norm_position", ["post", "pre"])
def test_decoding_with_the_native_scores_gives_every_frame_the_python_ones_give(norm_position: str) -> None:
    model = tiny_model(norm_position, seed=4)
    requests = requests_of_every_kind()
    native = events_of(model, CachedStepper(model, native=True), requests, native_scores=True)
    python = events_of(model, CachedStepper(model, native=True), requests, native_scores=False)
    assert without_timings(native) == without_timings(python)
    assert {f["type"] for f in native} == {"token", "beams", "done"}


@pytest.mark.parametrize("native", [True, False])
def test_decode_builds_no_step_events_and_gives_the_results_of_a_decoder_that_does(native: bool) -> None:
    model = tiny_model("post", seed=6)
    requests = requests_of_every_kind()
    quiet = events_of(model, CachedStepper(model, native=native), requests, native_scores=True, step_events=False)
    assert {f["type"] for f in quiet} == {"done"}
    full = events_of(model, CachedStepper(model, native=native), requests, native_scores=True)
    assert without_timings(quiet) == without_timings([f for f in full if f["type"] == "done"])
    first = next(f for f in quiet if f["request_id"] == "0")
    results = decode(model, [requests[0][0]] * 3, requests[0][1])  # decode(): a decoder without step events
    assert all(isinstance(r, DoneEvent) for r in results)
    assert [r.ids for r in results] == [first["ids"]] * 3
