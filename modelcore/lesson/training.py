"""Tiny training comparisons of the lesson: the causal mask against none, and the FFN's width.

Seconds each on one thread: a small model on an algorithmic task, the same data, batches and seed for every arm.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from modelcore.experiments.runs import RunConfig, build_probe, final_loss
from modelcore.masks import make_src_mask, make_tgt_mask
from modelcore.model import EncoderDecoder
from modelcore.tokenization import BOS_ID, EOS_ID, PAD_ID
from modelcore.training.batching import BatchStream, collate, encode_pairs

Progress = Callable[[dict[str, Any]], None]
# A small model copying short sequences: learnable in a few hundred steps on one thread (about 5 s an arm).
BASE = RunConfig(task="copy", n_train=2000, layers=2, d_model=32, n_heads=2, d_ff=128, norm_position="pre",
                 steps=300, batch_size=32, lr=3e-3, eval_size=100, seed=0)
FFN_WIDTHS = (1, 2, 4)  # d_ff as a multiple of d_model
MAX_STEPS = 600


def _target_mask(tgt: Tensor, causal: bool) -> Tensor:
    """Causal and padding (B, 1, T, T), or padding alone (B, 1, 1, T): every position sees the whole target."""
    return make_tgt_mask(tgt) if causal else (tgt != PAD_ID)[:, None, None, :]


def _logits(model: EncoderDecoder, src: Tensor, tgt: Tensor, causal: bool) -> Tensor:
    src_mask = make_src_mask(src)
    return model.generator(model.decode(model.encode(src, src_mask), src_mask, tgt, _target_mask(tgt, causal)))


@torch.no_grad()
def _generate(model: EncoderDecoder, src: Tensor, causal: bool, max_len: int) -> list[list[int]]:
    """Greedy, token by token: at step t the decoder has only what it generated so far (no future to look at)."""
    tgt = torch.full((src.size(0), 1), BOS_ID, dtype=torch.long)
    done = torch.zeros(src.size(0), dtype=torch.bool)
    for _ in range(max_len):
        next_id = _logits(model, src, tgt, causal)[:, -1].argmax(-1).masked_fill(done, PAD_ID)
        tgt = torch.cat([tgt, next_id[:, None]], dim=1)
        done |= next_id == EOS_ID
        if done.all():
            break
    return [row[: row.index(EOS_ID)] if EOS_ID in row else row for row in tgt[:, 1:].tolist()]


@torch.no_grad()
def _scores(model: EncoderDecoder, examples: list[Any], causal: bool) -> dict[str, float]:
    """Teacher-forced loss and accuracy (what training sees) against exact match when generating."""
    model.eval()
    batch = collate(examples)
    logits = _logits(model, batch.src, batch.tgt_in, causal)
    loss = float(F.cross_entropy(logits.transpose(1, 2), batch.tgt_out, ignore_index=PAD_ID))
    counted = batch.tgt_out != PAD_ID
    accuracy = float((logits.argmax(-1) == batch.tgt_out)[counted].float().mean())
    generated = _generate(model, batch.src, causal, batch.tgt_out.size(1) + 2)
    exact = sum(g == list(e.tgt) for g, e in zip(generated, examples, strict=True)) / len(examples)
    model.train()
    return {"teacher_forced_loss": round(loss, 5), "teacher_forced_accuracy": round(accuracy, 4),
            "exact_match": round(exact, 4)}


def _train_arm(config: RunConfig, causal: bool, report: Callable[[int, float], None]) -> dict[str, Any]:
    probe = build_probe(config)
    model = probe.model
    max_len = model.config.max_len
    examples = encode_pairs(probe.task.train, probe.src_tokenizer, probe.tgt_tokenizer, max_len)
    valid = encode_pairs(probe.task.valid, probe.src_tokenizer, probe.tgt_tokenizer, max_len)
    stream = BatchStream(examples, config.batch_size, config.seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr, betas=config.betas, eps=1e-9)
    losses: list[float] = []
    model.train()
    for step in range(1, config.steps + 1):
        batch = stream.next()
        logits = _logits(model, batch.src, batch.tgt_in, causal)
        loss = F.cross_entropy(logits.transpose(1, 2), batch.tgt_out, ignore_index=PAD_ID)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(round(loss.item(), 5))
        report(step, losses[-1])
    scores = _scores(model, valid, causal)
    example = valid[0]
    shown = _generate(model.eval(), collate([example]).src, causal, len(example.tgt) + 2)[0]
    return {"loss": losses, "final_loss": final_loss(losses), **scores,
            "example": {"source": probe.src_tokenizer.decode(example.src), "target": probe.tgt_tokenizer.decode(example.tgt),
                        "generated": probe.tgt_tokenizer.decode(shown)}}


def _config(params: dict[str, Any]) -> RunConfig:
    steps = params.get("steps", BASE.steps)
    seed = params.get("seed", BASE.seed)
    for name, value, top in (("steps", steps, MAX_STEPS), ("seed", seed, 1000)):
        if isinstance(value, bool) or not isinstance(value, int) or not (0 if name == "seed" else 1) <= value <= top:
            raise ValueError(f"{name} must be a whole number up to {top}")
    return BASE.replace(steps=steps, seed=seed)


def mask_training(params: dict[str, Any], report: Progress) -> dict[str, Any]:
    """The same tiny model trained with the causal mask and without it."""
    config = _config(params)
    arms = []
    for i, (label, causal) in enumerate((("causal mask", True), ("no mask", False))):
        def on_step(step: int, loss: float, i: int = i, label: str = label) -> None:
            report({"progress": (i * config.steps + step) / (2 * config.steps), "arm": label, "step": step,
                    "steps": config.steps, "loss": loss})

        arms.append({"label": label, "causal": causal, **_train_arm(config, causal, on_step)})
    return {"config": config.to_dict(), "arms": arms}


def ffn_training(params: dict[str, Any], report: Progress) -> dict[str, Any]:
    """The same tiny model with d_ff = 1x, 2x and 4x d_model."""
    config = _config(params)
    arms = []
    for i, width in enumerate(FFN_WIDTHS):
        label = f"d_ff = {width} × d_model"
        arm_config = config.replace(d_ff=width * config.d_model)

        def on_step(step: int, loss: float, i: int = i, label: str = label) -> None:
            report({"progress": (i * config.steps + step) / (len(FFN_WIDTHS) * config.steps), "arm": label,
                    "step": step, "steps": config.steps, "loss": loss})

        params_count = sum(p.numel() for p in build_probe(arm_config).model.parameters())
        arms.append({"label": label, "width": width, "d_ff": arm_config.d_ff, "parameters": params_count,
                     **_train_arm(arm_config, True, on_step)})
    return {"config": config.to_dict(), "arms": arms}


TRAININGS: dict[str, Callable[[dict[str, Any], Progress], dict[str, Any]]] = {"mask": mask_training,
                                                                               "ffn": ffn_training}


def run_training(kind: str, params: dict[str, Any], *, on_progress: Progress | None = None) -> dict[str, Any]:
    """One of the lesson's training comparisons; ValueError on a bad request."""
    if kind not in TRAININGS:
        raise ValueError(f"no training comparison {kind!r} (choose from: {', '.join(TRAININGS)})")
    result = TRAININGS[kind](params, on_progress or (lambda _info: None))
    return {"kind": kind, **result}
