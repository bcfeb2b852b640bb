"""Sampling at every accepted temperature and top_p: the tiniest positive values included, never NaN or a crash."""

from __future__ import annotations

import pytest
import torch

from modelcore.decoding import DecodeParams
from modelcore.decoding.search import sample, tempered

TINY = [1e-300, 5e-324, 1e-45, 1e-10]  # 5e-324: the smallest positive float; 1e-45 is 0 as a float32
TOP = 7


def logits_row(seed: int = 0, banned: tuple[int, ...] = ()) -> torch.Tensor:
    """A float32 row of 50 logits whose largest, at TOP, is 1e-3 above the runner-up; some ids banned."""
    row = torch.randn(50, generator=torch.Generator().manual_seed(seed))
    row[TOP] = row.max() + 1e-3  # a close runner-up: a tiny temperature must still tell them apart
    row[list(banned)] = -torch.inf
    return row


@pytest.mark.parametrize("value", TINY)
def test_the_tiniest_temperatures_and_top_ps_are_accepted_by_the_parameters(value: float) -> None:
    DecodeParams(strategy="sample", temperature=value, top_p=value)  # no exception: the socket lets them through


@pytest.mark.parametrize("temperature", TINY)
@pytest.mark.parametrize("banned", [(), (0, 3, 49)])
def test_a_tiny_temperature_gives_finite_probabilities_that_sum_to_one_on_the_top_token(temperature, banned) -> None:
    probs = tempered(logits_row(banned=banned), temperature)
    assert torch.isfinite(probs).all() and (probs >= 0).all()
    assert probs.sum().item() == pytest.approx(1.0, abs=1e-12)
    assert probs[TOP].item() == 1.0 and int(probs.argmax()) == TOP
    assert probs[list(banned)].sum().item() == 0.0


# Every combination in which a tiny temperature or a tiny top_p pins the draw to the most likely token.
PINNED = [(t, p, k) for t in [*TINY, 1.0] for p in [*TINY, 1.0] for k in (0, 1, 5) if min(t, p) < 1.0]


@pytest.mark.parametrize(("temperature", "top_p", "top_k"), PINNED)
def test_sampling_at_tiny_values_draws_the_top_token_without_an_exception(temperature, top_p, top_k) -> None:
    for seed in range(20):
        probs = tempered(logits_row(seed), temperature)
        assert sample(probs, top_k, top_p, torch.Generator().manual_seed(seed)) == TOP


@pytest.mark.parametrize("temperature", [0.05, 0.5, 1.0, 2.0, 50.0])
def test_ordinary_temperatures_give_softmax_of_logits_over_t(temperature: float) -> None:
    row = logits_row(3, banned=(4,))
    expected = torch.softmax(row.double() / temperature, -1)
    assert torch.allclose(tempered(row, temperature), expected, rtol=1e-12, atol=1e-15)
    assert torch.allclose(tempered(row, temperature).float(), torch.softmax(row / temperature, -1), atol=1e-6)


def test_ordinary_sampling_still_follows_the_distribution() -> None:
    row = torch.tensor([2.0, 1.0, 0.0, -1.0])
    probs = tempered(row, 1.5)
    generator = torch.Generator().manual_seed(0)
    draws = torch.tensor([sample(probs, 0, 1.0, generator) for _ in range(5_000)])
    frequencies = torch.bincount(draws, minlength=4).double() / len(draws)
    assert torch.allclose(frequencies, probs, atol=0.025)  # about 3.5 standard errors
