"""Each of our layers computes what torch.nn's reference layer computes, given the same weights."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from modelcore.config import ModelConfig
from modelcore.model.layers import DecoderLayer, EncoderLayer
from modelcore.model.norms import RMSNorm

D_MODEL, N_HEADS, D_FF = 32, 4, 64


def _config(norm_position: str, norm: str = "layernorm") -> ModelConfig:
    return ModelConfig(
        src_vocab_size=10, tgt_vocab_size=10, d_model=D_MODEL, n_heads=N_HEADS, d_ff=D_FF,
        n_encoder_layers=1, n_decoder_layers=1, dropout=0.1, norm_position=norm_position, norm=norm,
    )


def _copy_attention(ours: nn.Module, theirs: nn.MultiheadAttention) -> None:
    q, k, v = theirs.in_proj_weight.chunk(3)
    qb, kb, vb = theirs.in_proj_bias.chunk(3)
    for proj, w, b in ((ours.q_proj, q, qb), (ours.k_proj, k, kb), (ours.v_proj, v, vb)):
        proj.weight.data.copy_(w)
        proj.bias.data.copy_(b)
    ours.out_proj.load_state_dict(theirs.out_proj.state_dict())


def _copy_layer(ours: nn.Module, theirs: nn.Module) -> None:
    _copy_attention(ours.self_attn, theirs.self_attn)
    if hasattr(theirs, "multihead_attn"):
        _copy_attention(ours.cross_attn, theirs.multihead_attn)
    ours.ffn.linear1.load_state_dict(theirs.linear1.state_dict())
    ours.ffn.linear2.load_state_dict(theirs.linear2.state_dict())
    for name in ("norm1", "norm2", "norm3"):
        if hasattr(theirs, name):
            getattr(ours, name).load_state_dict(getattr(theirs, name).state_dict())


def _reference_norms_to_rms(theirs: nn.Module) -> None:
    for name in ("norm1", "norm2", "norm3"):
        if hasattr(theirs, name):
            rms = nn.RMSNorm(D_MODEL, eps=1e-5)
            nn.init.uniform_(rms.weight, 0.5, 1.5)
            setattr(theirs, name, rms)


def _same_weights(reference: type, ours_type: type, norm_position: str, norm: str) -> tuple[nn.Module, nn.Module]:
    """A torch.nn reference layer and ours holding its weights, both in eval mode."""
    torch.manual_seed(0)
    theirs = reference(
        D_MODEL, N_HEADS, D_FF, dropout=0.1, activation="relu", batch_first=True, norm_first=norm_position == "pre"
    )
    if norm == "rmsnorm":
        _reference_norms_to_rms(theirs)
    ours = ours_type(_config(norm_position, norm))
    _copy_layer(ours, theirs)
    return theirs.eval(), ours.eval()


@pytest.fixture
def no_torch_fastpath():
    """torch's fused inference path reads norm biases, which RMSNorm lacks."""
    torch.backends.mha.set_fastpath_enabled(False)
    yield
    torch.backends.mha.set_fastpath_enabled(True)


def _padded_batch(generator: torch.Generator, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(3, length, D_MODEL, generator=generator)
    pad = torch.zeros(3, length, dtype=torch.bool)
    pad[1, -2:] = True  # second sequence is two positions shorter
    pad[2, -4:] = True
    return x, pad


@pytest.mark.parametrize("norm_position", ["post", "pre"])
@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_encoder_layer_matches_torch(norm_position: str, norm: str, no_torch_fastpath) -> None:
    theirs, ours = _same_weights(nn.TransformerEncoderLayer, EncoderLayer, norm_position, norm)
    x, pad = _padded_batch(torch.Generator().manual_seed(1), 9)

    expected = theirs(x, src_key_padding_mask=pad)
    actual = ours(x, (~pad)[:, None, None, :])

    torch.testing.assert_close(actual, expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize("norm_position", ["post", "pre"])
@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_decoder_layer_matches_torch(norm_position: str, norm: str, no_torch_fastpath) -> None:
    theirs, ours = _same_weights(nn.TransformerDecoderLayer, DecoderLayer, norm_position, norm)
    g = torch.Generator().manual_seed(2)
    x, tgt_pad = _padded_batch(g, 7)
    memory, src_pad = _padded_batch(g, 11)
    causal = nn.Transformer.generate_square_subsequent_mask(7, dtype=torch.bool)  # True = hidden

    expected = theirs(
        x, memory, tgt_mask=causal, tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad
    )
    tgt_mask = ~causal[None, None] & (~tgt_pad)[:, None, None, :]
    actual = ours(x, memory, (~src_pad)[:, None, None, :], tgt_mask)

    torch.testing.assert_close(actual, expected, atol=1e-5, rtol=0)


def test_encoder_layer_matches_torch_fast_path() -> None:
    """torch's fused inference kernel (the default in eval mode) agrees too."""
    torch.manual_seed(0)
    theirs = nn.TransformerEncoderLayer(D_MODEL, N_HEADS, D_FF, batch_first=True).eval()
    ours = EncoderLayer(_config("post")).eval()
    _copy_layer(ours, theirs)
    x = torch.randn(2, 6, D_MODEL)
    with torch.no_grad():
        torch.testing.assert_close(ours(x, None), theirs(x), atol=1e-5, rtol=0)


def test_rmsnorm_matches_torch_and_the_formula() -> None:
    x = torch.randn(4, 5, D_MODEL) * 3 + 1
    ours = RMSNorm(D_MODEL)
    nn.init.uniform_(ours.weight, 0.5, 1.5)
    reference = nn.RMSNorm(D_MODEL, eps=1e-5)
    reference.load_state_dict(ours.state_dict())

    torch.testing.assert_close(ours(x), reference(x))
    by_hand = x / (x.pow(2).mean(-1, keepdim=True) + 1e-5).sqrt() * ours.weight
    torch.testing.assert_close(ours(x), by_hand)


def test_layernorm_keeps_no_running_statistics() -> None:
    """Unlike BatchNorm: the same input gives the same output in train and eval mode, whatever came before."""
    layer = EncoderLayer(_config("post").replace(dropout=0.0))
    x = torch.randn(2, 5, D_MODEL)
    before = layer.eval()(x, None)
    layer.train()(torch.randn(8, 5, D_MODEL) * 10 + 3, None)
    torch.testing.assert_close(layer.eval()(x, None), before)
    torch.testing.assert_close(layer.train()(x, None), before)
    assert not any(buf.numel() for buf in layer.buffers())
