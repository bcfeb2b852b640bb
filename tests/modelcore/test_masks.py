"""Masks: the decoder cannot peek at later target tokens; source padding changes nothing."""

from __future__ import annotations

import pytest
import torch

from modelcore import EncoderDecoder, ModelConfig, make_src_mask, make_tgt_mask
from modelcore.tokenization import PAD_ID


def _model(norm_position: str) -> EncoderDecoder:
    torch.manual_seed(0)
    config = ModelConfig.from_preset(
        "tiny", src_vocab_size=30, tgt_vocab_size=25, norm_position=norm_position, dropout=0.1
    )
    return EncoderDecoder(config).eval()


@pytest.mark.parametrize("norm_position", ["post", "pre"])
def test_later_target_tokens_change_no_earlier_logits(norm_position: str) -> None:
    model = _model(norm_position)
    src = torch.randint(4, 30, (2, 8))
    tgt = torch.randint(4, 25, (2, 10))
    for t in (0, 4, 8):
        changed = tgt.clone()
        changed[:, t + 1 :] = torch.randint(4, 25, changed[:, t + 1 :].shape)
        before, after = model(src, tgt), model(src, changed)
        torch.testing.assert_close(after[:, : t + 1], before[:, : t + 1], atol=1e-6, rtol=0)
        assert not torch.allclose(after[:, t + 1 :], before[:, t + 1 :])


@pytest.mark.parametrize("norm_position", ["post", "pre"])
def test_a_padded_sentence_gets_the_logits_it_gets_alone(norm_position: str) -> None:
    model = _model(norm_position)
    short_src, long_src = torch.randint(4, 30, (1, 5)), torch.randint(4, 30, (1, 9))
    tgt = torch.randint(4, 25, (2, 6))
    batch_src = torch.full((2, 9), PAD_ID)
    batch_src[0, :5], batch_src[1] = short_src, long_src

    torch.testing.assert_close(model(batch_src, tgt)[0], model(short_src, tgt[:1])[0], atol=1e-5, rtol=0)


def test_tokens_under_the_source_mask_change_nothing() -> None:
    model = _model("pre")
    src = torch.randint(4, 30, (2, 9))
    tgt = torch.randint(4, 25, (2, 6))
    src_mask = torch.ones(2, 1, 1, 9, dtype=torch.bool)
    src_mask[:, ..., 6:] = False
    tgt_mask = make_tgt_mask(tgt)
    other = src.clone()
    other[:, 6:] = torch.randint(4, 30, (2, 3))

    def hidden(s: torch.Tensor) -> torch.Tensor:
        return model.decode(model.encode(s, src_mask), src_mask, tgt, tgt_mask)

    torch.testing.assert_close(hidden(other), hidden(src), atol=1e-6, rtol=0)


def test_mask_shapes_and_meaning() -> None:
    src = torch.tensor([[5, 6, PAD_ID]])
    assert make_src_mask(src).tolist() == [[[[True, True, False]]]]
    tgt = torch.tensor([[1, 7, PAD_ID]])
    assert make_tgt_mask(tgt)[0, 0].tolist() == [
        [True, False, False],
        [True, True, False],
        [True, True, False],
    ]
