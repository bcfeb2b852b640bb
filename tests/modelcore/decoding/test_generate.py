"""The KV-cache decoder gives what recomputing the whole prefix gives, for every strategy and layer kind."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
import torch

from modelcore.decoding import (
    BeamsEvent,
    CachedStepper,
    DecodeParams,
    TokenEvent,
    decode,
    decode_stream,
)
from modelcore.tokenization import BOS_ID, EOS_ID, PAD_ID
from tests.fixtures.decoding import NATIVE_ISAS, SRC, done, native_kernels, run, tiny_model

LAYER_KINDS = [("post", "layernorm"), ("pre", "layernorm"), ("post", "rmsnorm"), ("pre", "rmsnorm")]
STRATEGIES = [
    DecodeParams(strategy="greedy", max_len=12),
    DecodeParams(strategy="beam", beam_size=3, n_best=3, max_len=12),
    DecodeParams(strategy="sample", seed=7, temperature=1.3, top_k=20, top_p=0.9, max_len=12),
]


STEPS = pytest.mark.parametrize("native", [False, True], ids=["python-step", "native-step"])


@pytest.fixture(params=NATIVE_ISAS)
def isa(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each set of the native step's kernels this CPU runs (AVX-512, AVX2, SSE), chosen as MODELCORE_ISA would."""
    yield from native_kernels(request.param)


@STEPS
@pytest.mark.parametrize("norm_position,norm", LAYER_KINDS)
@pytest.mark.parametrize("params", STRATEGIES, ids=lambda p: p.strategy)
def test_cached_decoding_equals_full_recompute(norm_position: str, norm: str, params: DecodeParams, native: bool) -> None:
    model = tiny_model(norm_position, norm)
    cached_events, cached_logits = run(model, [(SRC, params)], cache=True, native=native)
    full_events, full_logits = run(model, [(SRC, params)], cache=False)
    cached, full = done(cached_events)["0"], done(full_events)["0"]
    assert cached.ids == full.ids
    assert [h.ids for h in cached.n_best] == [h.ids for h in full.n_best]
    assert len(cached_logits) == len(full_logits) == cached.steps
    for a, b in zip(cached_logits, full_logits, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)


@pytest.mark.parametrize("norm_position", ["post", "pre"])
def test_the_fused_attention_kernel_gives_the_same_steps(norm_position: str) -> None:
    model = tiny_model(norm_position, seed=10)
    requests = [(SRC, DecodeParams(max_len=10)), (SRC[:2], DecodeParams(max_len=10))]  # padded sources
    plain_events, plain_logits = run(model, requests, cache=True)
    fused_events, fused_logits = run(model, requests, cache=True, fused_attention=True)
    assert [done(fused_events)[k].ids for k in "01"] == [done(plain_events)[k].ids for k in "01"]
    for a, b in zip(plain_logits, fused_logits, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)


@pytest.mark.parametrize("norm_position,norm", LAYER_KINDS)
def test_the_native_step_gives_the_python_steps_on_a_padded_batch_with_beams(norm_position: str, norm: str,
                                                                            isa: str) -> None:
    model = tiny_model(norm_position, norm, seed=11)
    requests = [(SRC, DecodeParams(max_len=10, min_len=10, capture_attention=True)),
                (SRC[:2], DecodeParams(strategy="beam", beam_size=3, max_len=10)),
                (SRC[3:], DecodeParams(strategy="sample", seed=3, max_len=10, capture_attention=True))]
    python_events, python_logits = run(model, requests, cache=True)
    native_events, native_logits = run(model, requests, cache=True, native=True)
    assert [done(native_events)[k].ids for k in "012"] == [done(python_events)[k].ids for k in "012"]
    for a, b in zip(python_logits, native_logits, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)
    python_tokens = [e for e in python_events if isinstance(e, TokenEvent)]
    native_tokens = [e for e in native_events if isinstance(e, TokenEvent)]
    assert len(python_tokens) == len(native_tokens)
    for a, b in zip(python_tokens, native_tokens, strict=True):  # the attention the views draw
        assert (a.self_attention is None) == (b.self_attention is None) == (a.request_id == "1")
        if a.self_attention is not None:
            torch.testing.assert_close(a.self_attention, b.self_attention, rtol=0, atol=1e-6)
            torch.testing.assert_close(a.cross_attention, b.cross_attention, rtol=0, atol=1e-6)


@pytest.mark.parametrize("rows", [1, 2, 5, 11], ids=["one-row", "two-rows", "five-rows", "eleven-rows"])
def test_the_native_step_gives_the_python_steps_for_a_few_rows_and_for_many(rows: int, isa: str) -> None:
    # The projections go in tiles of up to 8 rows (6 without AVX-512): a single row, a part of a
    # tile, and a full tile with a remainder.
    model = tiny_model("post", seed=12)
    requests = [(SRC[i % 5 :], DecodeParams(max_len=9, min_len=9)) for i in range(rows)]
    python_events, python_logits = run(model, requests, cache=True)
    native_events, native_logits = run(model, requests, cache=True, native=True)
    assert [e.ids for e in done(native_events).values()] == [e.ids for e in done(python_events).values()]
    for a, b in zip(python_logits, native_logits, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)


def test_the_native_projection_equals_a_matrix_product_for_every_shape_it_meets(isa: str) -> None:
    # Rows from one to past four tiles; widths that fill the 32-column panels and widths that leave a
    # ragged last panel (the vocabulary, 1000, does); inner sizes odd and even; with and without ReLU.
    from modelcore.decoding.native import native_step

    module = native_step()
    assert module is not None and module.isa() == isa
    generator = torch.Generator().manual_seed(3)
    for rows in [*range(1, 18), 33]:
        for inner, width in [(32, 96), (256, 1000), (7, 5), (33, 64), (64, 31)]:
            w = torch.randn(inner, width, generator=generator)
            b = torch.randn(width, generator=generator)
            x = torch.randn(rows, inner, generator=generator)
            packed = module.pack_weight(w)
            assert packed.shape == ((width + 31) // 32, inner, 32)
            expected = torch.addmm(b, x, w)
            torch.testing.assert_close(module.linear(x, packed, b), expected, rtol=1e-5, atol=1e-4)
            torch.testing.assert_close(module.linear(x, packed, b, relu=True), expected.relu(), rtol=1e-5, atol=1e-4)
    strided = packed.transpose(1, 2).contiguous().transpose(1, 2)  # the same values, not in the panel layout
    with pytest.raises(RuntimeError, match="pack_weight's own tensor"):
        module.linear(x, strided, b)


def test_the_native_step_refuses_an_id_outside_the_vocabulary_instead_of_reading_past_it() -> None:
    stepper = CachedStepper(tiny_model(), native=True)
    with torch.inference_mode():
        stepper.reserve(1, 8)
        stepper.add_sources([SRC], 8)
        with pytest.raises(RuntimeError, match="token id out of range"):
            stepper.step(torch.tensor([10_000]))
        assert stepper.step(torch.tensor([BOS_ID])).shape == (1, 50)  # and it still steps


def test_decoding_takes_the_native_step_where_it_is_fast_unless_told_not_to(monkeypatch: pytest.MonkeyPatch) -> None:
    from modelcore.decoding import native

    # Built by make setup; a CPU float32 model takes it where it is fast (AVX-512), or when forced.
    assert CachedStepper(tiny_model()).native == native.fast_here()
    assert CachedStepper(tiny_model(), native=True).native
    assert not CachedStepper(tiny_model(), native=False).native
    monkeypatch.setenv("MODELCORE_NATIVE", "force")
    assert native.fast_here() and CachedStepper(tiny_model()).native
    native.native_step.cache_clear()
    monkeypatch.setenv("MODELCORE_NATIVE", "0")
    try:
        assert not CachedStepper(tiny_model()).native  # the operator's switch: the Python step serves
        with pytest.raises(RuntimeError, match="not available"):
            CachedStepper(tiny_model(), native=True)
    finally:
        native.native_step.cache_clear()


@STEPS
@pytest.mark.parametrize("norm_position", ["post", "pre"])
def test_cached_decoding_equals_full_recompute_without_residuals(norm_position: str, native: bool) -> None:
    model = tiny_model(norm_position, residual=False)
    params = DecodeParams(max_len=10)
    cached_events, cached_logits = run(model, [(SRC, params)], cache=True, native=native)
    full_events, full_logits = run(model, [(SRC, params)], cache=False)
    assert done(cached_events)["0"].ids == done(full_events)["0"].ids
    for a, b in zip(cached_logits, full_logits, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)


def test_the_cache_grows_by_one_position_per_step_and_reports_its_bytes() -> None:
    model = tiny_model()
    events, _ = run(model, [(SRC, DecodeParams(max_len=6, min_len=6))], cache=True)
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    config = model.config
    per_position = 2 * config.n_heads * config.d_k * 4 * config.n_decoder_layers  # k + v, float32, all layers
    for step, event in enumerate(tokens):
        assert event.cache.self_positions == step + 1  # <bos> and every token fed so far
        assert event.cache.cross_positions == len(SRC)
        assert event.cache.bytes == (step + 1 + len(SRC)) * per_position


def test_beam_size_one_equals_greedy() -> None:
    model = tiny_model(seed=3)
    greedy = decode(model, [SRC, SRC[:3]], DecodeParams(max_len=15))
    beam = decode(model, [SRC, SRC[:3]], DecodeParams(strategy="beam", beam_size=1, max_len=15))
    assert [r.ids for r in beam] == [r.ids for r in greedy]
    assert [r.logprob for r in beam] == pytest.approx([r.logprob for r in greedy], abs=1e-5)


def test_beam_search_finds_an_output_at_least_as_likely_as_greedy() -> None:
    model = tiny_model(seed=4)
    greedy = decode(model, [SRC], DecodeParams(max_len=10, min_len=10))[0]
    beam = decode(model, [SRC], DecodeParams(strategy="beam", beam_size=4, n_best=4, max_len=10, min_len=10,
                                             length_penalty=0.0))[0]
    assert beam.logprob >= greedy.logprob - 1e-5
    scores = [h.score for h in beam.n_best]
    assert scores == sorted(scores, reverse=True) and len(beam.n_best) == 4


def test_beam_events_describe_a_tree() -> None:
    model = tiny_model(seed=5)
    events, _ = run(model, [(SRC, DecodeParams(strategy="beam", beam_size=3, max_len=8))], cache=True)
    steps = [e for e in events if isinstance(e, BeamsEvent)]
    assert [e.seq for e in steps] == list(range(len(steps)))
    assert len(steps[0].beams) == 3 and {b.parent for b in steps[0].beams} == {0}  # all grow from <bos>
    for previous, current in zip(steps, steps[1:], strict=False):
        assert all(0 <= b.parent < len(previous.beams) for b in current.beams)
        logprobs = [b.logprob for b in current.beams]
        assert logprobs == sorted(logprobs, reverse=True)


def test_greedy_picks_the_most_probable_token_and_lists_alternatives() -> None:
    model = tiny_model()
    events, _ = run(model, [(SRC, DecodeParams(max_len=5, top_alternatives=4))], cache=True)
    for event in [e for e in events if isinstance(e, TokenEvent)]:
        assert event.id == event.alternatives[0][0] and event.prob == pytest.approx(event.alternatives[0][2])
        probs = [p for _, _, p in event.alternatives]
        assert len(probs) == 4 and probs == sorted(probs, reverse=True)
        assert all(i not in (PAD_ID, BOS_ID) for i, _, _ in event.alternatives)  # framing ids never offered


def test_sampling_is_reproducible_with_a_seed_and_narrows_to_greedy() -> None:
    model = tiny_model(seed=6)
    sample = DecodeParams(strategy="sample", seed=11, max_len=12, temperature=2.0)
    assert decode(model, [SRC], sample)[0].ids == decode(model, [SRC], sample)[0].ids
    other_seeds = {tuple(decode(model, [SRC], replace(sample, seed=s))[0].ids)
                   for s in range(5)}
    assert len(other_seeds) > 1  # at temperature 2 the seed matters
    greedy = decode(model, [SRC], DecodeParams(max_len=12))[0].ids
    for narrow in (dict(top_k=1), dict(top_p=1e-6)):
        params = DecodeParams(strategy="sample", seed=1, max_len=12, temperature=2.0, **narrow)
        assert decode(model, [SRC], params)[0].ids == greedy


def test_forced_prefix_is_followed_then_the_model_continues() -> None:
    model = tiny_model(seed=2)
    prefix = (17, 23, 5)
    for strategy in ("greedy", "beam"):
        params = DecodeParams(strategy=strategy, forced_prefix=prefix, max_len=10)
        cached_events, cached_logits = run(model, [(SRC, params)], cache=True)
        full_events, full_logits = run(model, [(SRC, params)], cache=False)
        result = done(cached_events)["0"]
        assert tuple(result.ids[:3]) == prefix and result.ids == done(full_events)["0"].ids
        forced = [e.forced for e in cached_events if isinstance(e, TokenEvent | BeamsEvent)]
        assert forced[:3] == [True, True, True] and not any(forced[3:])
        for a, b in zip(cached_logits, full_logits, strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-5)


def test_max_len_and_min_len_bound_the_output() -> None:
    model = tiny_model(seed=8)
    with torch.no_grad():
        model.generator.bias[EOS_ID] = 50.0  # this model wants to stop at once
    assert decode(model, [SRC], DecodeParams(max_len=20))[0].ids == []
    forced_on = decode(model, [SRC], DecodeParams(max_len=20, min_len=6))[0]
    assert len(forced_on.ids) == 6 and forced_on.reason == "eos"
    with torch.no_grad():
        model.generator.bias[EOS_ID] = -50.0  # and now never
    capped = decode(model, [SRC], DecodeParams(max_len=9))[0]
    assert len(capped.ids) == 9 and capped.reason == "max_len"


def test_an_unseeded_sample_reports_its_seed_and_replays_without_touching_the_global_rng() -> None:
    model = tiny_model(seed=9)
    rng_before = torch.get_rng_state()
    events = list(decode_stream(model, SRC, DecodeParams(strategy="sample", max_len=10, temperature=2.0)))
    assert torch.equal(torch.get_rng_state(), rng_before)
    seed = events[0].to_dict()["params"]["seed"]
    replay = decode(model, [SRC], DecodeParams(strategy="sample", max_len=10, temperature=2.0, seed=seed))[0]
    assert isinstance(seed, int) and replay.ids == events[-1].ids  # type: ignore[attr-defined]
