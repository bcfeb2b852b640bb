"""Representation drift and norm statistics on a real sentence."""
from __future__ import annotations

import pytest
import torch

from modelcore.config import ModelConfig
from modelcore.experiments import norm_statistics, representation_drift
from modelcore.model import EncoderDecoder

SRC = torch.tensor([[5, 9, 14, 7, 22, 11, 2]])  # (1, S), ends with <eos>
TGT = torch.tensor([[1, 6, 8, 12, 30]])  # (1, T), starts with <bos>


def model(**switches) -> EncoderDecoder:
    torch.manual_seed(0)
    config = ModelConfig(src_vocab_size=40, tgt_vocab_size=40, d_model=32, n_heads=4, d_ff=64,
                         n_encoder_layers=6, n_decoder_layers=2, dropout=0.0, **switches)
    return EncoderDecoder(config)


def test_without_residuals_every_position_ends_as_the_same_vector():
    with_res = representation_drift(model(norm_position="pre"), SRC)
    without = representation_drift(model(norm_position="pre", residual=False), SRC)
    assert len(with_res["layers"]) == len(without["layers"]) == 6
    last_with, last_without = with_res["layers"][-1], without["layers"][-1]
    # With residuals each token keeps much of its input (measured: cosine 0.34..0.74 after six layers).
    assert min(last_with["cosine"]) > 0.3
    assert sum(last_with["cosine"]) > sum(last_without["cosine"])
    # Without residuals attention averages the positions into one vector: no spread left.
    assert last_with["spread"] > 0.1
    assert last_without["spread"] < 1e-3
    assert without["layers"][0]["spread"] > 100 * last_without["spread"]


def test_layer_norm_at_initialisation_gives_mean_0_and_variance_1_at_every_position():
    rows = norm_statistics(model(norm="layernorm"), SRC, TGT)
    names = [row["name"] for row in rows]
    assert names[:2] == ["encoder.layers.0.norm1", "encoder.layers.0.norm2"] and "decoder.layers.1.norm3" in names
    for row in rows:
        assert row["out_mean"] == pytest.approx([0.0] * len(row["out_mean"]), abs=1e-4)
        assert row["out_var"] == pytest.approx([1.0] * len(row["out_var"]), abs=1e-3)  # eps = 1e-5 takes a little
    assert any(abs(m) > 1e-3 for row in rows for m in row["in_mean"])


def test_rms_norm_scales_the_mean_square_to_1_but_does_not_centre():
    rows = norm_statistics(model(norm="rmsnorm"), SRC, TGT)
    for row in rows:
        mean_square = [v + m * m for v, m in zip(row["out_var"], row["out_mean"], strict=True)]
        assert mean_square == pytest.approx([1.0] * len(mean_square), abs=1e-3)
        # The mean after is the mean before divided by the root mean square before: not zero unless it was.
        for m_in, v_in, m_out in zip(row["in_mean"], row["in_var"], row["out_mean"], strict=True):
            assert m_out == pytest.approx(m_in / (v_in + m_in * m_in + 1e-5) ** 0.5, abs=1e-3)


def test_the_statistics_of_a_position_do_not_depend_on_the_rest_of_the_batch():
    # No running statistics: the sentence alone, or next to another one, gives the same figures.
    net = model(norm="layernorm")
    alone = norm_statistics(net, SRC, TGT)
    other = torch.tensor([[33, 34, 35, 36, 37, 38, 2]])
    net.train()
    with torch.no_grad():
        net(torch.cat([SRC, other]), torch.cat([TGT, TGT]))  # a training-mode pass would update BatchNorm
    again = norm_statistics(net, SRC, TGT)
    assert alone == again
