"""The one training step both loops take: the rate set, gradients (clipped when asked), Adam's step unless refused."""
from __future__ import annotations

import math

import torch

from modelcore.config import ModelConfig
from modelcore.model import EncoderDecoder
from modelcore.training.batching import Batch
from modelcore.training.step import train_step


def setup(seed: int = 0) -> tuple[EncoderDecoder, torch.optim.Optimizer, Batch]:
    torch.manual_seed(seed)
    model = EncoderDecoder(ModelConfig.from_preset("tiny", src_vocab_size=20, tgt_vocab_size=20))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0)
    src = torch.randint(4, 20, (4, 7))
    tgt = torch.randint(4, 20, (4, 6))
    return model, optimizer, Batch(src, tgt[:, :-1], tgt[:, 1:], int(tgt[:, 1:].numel()))


def test_a_refused_step_leaves_the_weights_and_keeps_the_gradients():
    model, optimizer, batch = setup()
    before = [p.detach().clone() for p in model.parameters()]
    seen = []
    outcome = train_step(model, optimizer, batch, lr=1e-3, update_if=lambda loss: seen.append(loss) or False)
    assert not outcome.updated and seen == [outcome.loss] and math.isfinite(outcome.loss)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)
    assert optimizer.param_groups[0]["lr"] == 1e-3


def test_an_accepted_step_moves_the_weights_and_clipping_bounds_the_gradients():
    model, optimizer, batch = setup()
    measured = train_step(model, optimizer, batch, lr=1e-3, clip_grad_norm=0.0)
    assert measured.updated and measured.grad_norm is not None and measured.grad_norm > 1e-3
    model, optimizer, batch = setup()
    clipped = train_step(model, optimizer, batch, lr=1e-3, clip_grad_norm=1e-3)
    total = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters() if p.grad is not None]))
    assert clipped.loss == measured.loss and clipped.grad_norm == measured.grad_norm  # the norm before clipping
    assert float(total) <= 1e-3 * 1.01
