"""One training step, shared by the training loop and the experiments' probe runs."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from modelcore.model import EncoderDecoder
from modelcore.tokenization import PAD_ID
from modelcore.training.batching import Batch


@dataclass(frozen=True)
class StepOutcome:
    """The step's loss (before the update), its gradient norm when measured, and whether Adam stepped."""

    loss: float
    grad_norm: float | None
    updated: bool


def teacher_forced_loss(model: EncoderDecoder, batch: Batch, *, label_smoothing: float = 0.0) -> torch.Tensor:
    """Cross-entropy of the next target token given the true prefix; padding does not count."""
    device = batch.src.device
    # bfloat16 autocast on CUDA only: on a CPU it is slower than float32 for these sizes.
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else contextlib.nullcontext()
    with autocast:
        logits = model(batch.src, batch.tgt_in)  # (B, T, V)
    return F.cross_entropy(
        logits.float().transpose(1, 2), batch.tgt_out, ignore_index=PAD_ID, label_smoothing=label_smoothing
    )


def train_step(
    model: EncoderDecoder,
    optimizer: torch.optim.Optimizer,
    batch: Batch,
    *,
    lr: float,
    label_smoothing: float = 0.0,
    clip_grad_norm: float | None = None,
    update_if: Callable[[float], bool] | None = None,
) -> StepOutcome:
    """Set the rate, compute the loss and its gradients, then let Adam step (unless update_if(loss) says no).

    clip_grad_norm: None leaves the gradients as they are (and measures no norm); 0 measures the norm
    without clipping; above 0 clips to it. The gradients stay on the parameters after the step, for
    whoever records them.
    """
    for group in optimizer.param_groups:
        group["lr"] = lr
    loss = teacher_forced_loss(model, batch, label_smoothing=label_smoothing)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    grad_norm = None
    if clip_grad_norm is not None:
        grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), clip_grad_norm or float("inf")))
    value = loss.item()
    updated = update_if is None or update_if(value)
    if updated:
        optimizer.step()
    return StepOutcome(value, grad_norm, updated)
