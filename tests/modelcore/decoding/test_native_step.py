"""The native step's attention and single-row projections at shapes the tiny model never meets (issue 49).

The AVX2 kernels read a head's dk floats in whole vectors with a scalar tail, keys 8 at a time, and a single
row's projection a whole 32-column panel at once; heads of 12, 20 and 72 floats (a tail, no whole vector of
AVX-512, more than 8 vectors), sources and targets past 8 positions, and two threads must all give the
Python step's tokens, logits and attention.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from modelcore import EncoderDecoder, ModelConfig
from modelcore.decoding import DecodeParams, TokenEvent
from tests.fixtures.decoding import NATIVE_ISAS, done, native_kernels, run


@pytest.fixture(params=NATIVE_ISAS)
def isa(request: pytest.FixtureRequest) -> Iterator[str]:
    yield from native_kernels(request.param)


def model_with_heads(d_k: int, n_heads: int = 3) -> EncoderDecoder:
    torch.manual_seed(d_k)
    config = ModelConfig(
        src_vocab_size=40, tgt_vocab_size=50, d_model=d_k * n_heads, n_heads=n_heads, d_ff=40, n_encoder_layers=1,
        n_decoder_layers=2, dropout=0.0, norm_position="post",
    )
    model = EncoderDecoder(config).eval()
    with torch.no_grad():
        model.generator.weight.mul_(4.0)
    return model


@pytest.mark.parametrize("d_k", [12, 20, 72])
@pytest.mark.parametrize("threads", [1, 2])
def test_the_native_step_gives_the_python_steps_for_heads_of_any_width(d_k: int, threads: int, isa: str) -> None:
    model = model_with_heads(d_k)
    source = [5, 9, 14, 7, 22, 31, 8, 11, 19, 26, 4, 33]  # 12 positions: a block of 8 keys and a remainder
    requests = [(source, DecodeParams(max_len=11, min_len=11, capture_attention=True)),  # alone: a single row
                (source[:9], DecodeParams(max_len=11, min_len=11))]
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        single = [run(model, requests[:1], cache=True, native=native) for native in (False, True)]
        batch = [run(model, requests, cache=True, native=native) for native in (False, True)]
    finally:
        torch.set_num_threads(before)
    for (python_events, python_logits), (native_events, native_logits) in (single, batch):
        assert [e.ids for e in done(native_events).values()] == [e.ids for e in done(python_events).values()]
        for a, b in zip(python_logits, native_logits, strict=True):
            torch.testing.assert_close(a, b, rtol=2e-6, atol=1e-5)  # logits up to ~13 here: a few ulps
        python_tokens = [e for e in python_events if isinstance(e, TokenEvent) and e.self_attention is not None]
        native_tokens = [e for e in native_events if isinstance(e, TokenEvent) and e.self_attention is not None]
        assert len(python_tokens) == len(native_tokens) == 11
        for a, b in zip(python_tokens, native_tokens, strict=True):
            torch.testing.assert_close(a.self_attention, b.self_attention, rtol=0, atol=1e-6)
            torch.testing.assert_close(a.cross_attention, b.cross_attention, rtol=0, atol=1e-6)
