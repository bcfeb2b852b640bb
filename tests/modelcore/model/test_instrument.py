"""Instrumentation records what the model computed, and nothing when it is off."""

from __future__ import annotations

import pytest
import torch

from modelcore import EncoderDecoder, ModelConfig, record
from modelcore.tokenization import PAD_ID


@pytest.fixture
def model() -> EncoderDecoder:
    torch.manual_seed(0)
    config = ModelConfig.from_preset("tiny", src_vocab_size=30, tgt_vocab_size=25, norm_position="pre")
    return EncoderDecoder(config).eval()


@pytest.fixture
def batch() -> tuple[torch.Tensor, torch.Tensor]:
    src = torch.randint(4, 30, (2, 7))
    src[1, 5:] = PAD_ID
    tgt = torch.randint(4, 25, (2, 5))
    tgt[0, 4:] = PAD_ID
    return src, tgt


def test_attention_rows_sum_to_one_and_masked_keys_get_exactly_zero(model, batch) -> None:
    src, tgt = batch
    with record(model) as rec:
        model(src, tgt)

    assert len(rec.encoder_self) == len(rec.decoder_self) == len(rec.cross) == 2
    for weights in rec.encoder_self + rec.decoder_self + rec.cross:
        torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))
    for weights in rec.encoder_self + rec.cross:
        assert (weights[1, :, :, 5:] == 0).all()  # padded source keys
        assert (weights[1, :, :, :5] > 0).all()
    for weights in rec.decoder_self:
        assert weights.shape == (2, 4, 5, 5)
        assert (weights.triu(diagonal=1) == 0).all()  # the future
        assert (weights[0, :, :, 4] == 0)[:, :4].all()  # the padded target key


def test_recording_changes_no_output(model, batch) -> None:
    src, tgt = batch
    plain = model(src, tgt)
    with record(model):
        recorded = model(src, tgt)
    torch.testing.assert_close(recorded, plain, atol=1e-5, rtol=0)


def test_hidden_states_norm_statistics_and_ffn_zeros(model, batch) -> None:
    src, tgt = batch
    with record(model) as rec:
        logits = model(src, tgt)

    assert [h.shape for h in rec.hidden_states("encoder")] == [(2, 7, 64)] * 2
    assert [h.shape for h in rec.hidden_states("decoder")] == [(2, 5, 64)] * 2
    final = model.decoder.norm(rec.hidden_states("decoder")[-1])
    torch.testing.assert_close(model.generator(final), logits)
    assert set(rec.norms) == {
        "encoder.layers.0.norm1", "encoder.layers.0.norm2", "encoder.layers.1.norm1", "encoder.layers.1.norm2",
        "encoder.norm", "decoder.norm",
        *(f"decoder.layers.{i}.norm{j}" for i in range(2) for j in (1, 2, 3)),
    }
    stats = rec.norms["encoder.layers.1.norm2"]
    assert stats.in_mean.shape == (2, 7)
    # LayerNorm: each position's output has mean ~0 and variance ~1, whatever its input had.
    torch.testing.assert_close(stats.out_mean, torch.full((2, 7), 0.0), atol=1e-5, rtol=0)
    torch.testing.assert_close(stats.out_var, torch.full((2, 7), 1.0), atol=1e-3, rtol=0)
    assert (stats.in_var - 1).abs().max() > 0.1
    zeros = rec.ffn_zero_fraction["decoder.layers.0.ffn"]
    assert zeros.shape == (2, 5) and ((zeros > 0.2) & (zeros < 0.8)).all()  # ReLU zeros about half at init


def test_nothing_is_recorded_outside_the_context(model, batch) -> None:
    src, tgt = batch
    with record(model) as rec:
        pass
    model(src, tgt)
    assert rec.attention == {} and rec.hidden == {} and rec.norms == {} and rec.ffn_zero_fraction == {}
    assert all(not m._forward_hooks for m in model.modules())
    assert all(not m._forward_pre_hooks for m in model.modules())
