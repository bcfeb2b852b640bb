"""The sinusoid position table is the paper's formula, and positions beyond it are refused."""

from __future__ import annotations

import math

import pytest
import torch

from modelcore.model.embeddings import PositionalEncoding, sinusoid_table


@pytest.mark.parametrize("d_model", [8, 7])
def test_each_entry_is_the_papers_sine_or_cosine(d_model: int) -> None:
    table = sinusoid_table(50, d_model)
    assert table.shape == (50, d_model)
    for pos in (0, 1, 17, 49):
        for i in range(d_model):
            angle = pos / 10000 ** ((i - i % 2) / d_model)  # PE(pos, 2k) = sin(...), PE(pos, 2k + 1) = cos(...)
            expected = math.sin(angle) if i % 2 == 0 else math.cos(angle)
            assert table[pos, i].item() == pytest.approx(expected, abs=1e-5), (pos, i)


def test_position_zero_is_sine_zero_cosine_one_and_low_dimensions_turn_fastest() -> None:
    table = sinusoid_table(100, 16)
    assert table[0].tolist() == [0.0, 1.0] * 8
    changes = (table[1:] - table[:-1]).abs().mean(dim=0)  # (d_model,): how much each dimension moves per position
    assert changes[0] > changes[6] > changes[14]


def test_the_encoding_adds_the_table_from_an_offset_and_refuses_what_it_does_not_hold() -> None:
    encoding = PositionalEncoding(16, max_len=10, dropout=0.0).eval()
    x = torch.zeros(2, 3, 16)
    torch.testing.assert_close(encoding(x, offset=4), sinusoid_table(10, 16)[4:7].expand(2, 3, 16))
    with pytest.raises(ValueError, match="longer than max_len 10"):
        encoding(torch.zeros(1, 8, 16), offset=3)
