"""The training loop: teacher forcing, Adam with the paper's schedule, checkpoints that resume exactly."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from modelcore.checkpoint import (
    CheckpointError,
    has_train_state,
    load_model,
    load_train_state,
    save_model,
    save_train_state,
)
from modelcore.config import PRESETS, ModelConfig
from modelcore.device import resolve_device
from modelcore.model import EncoderDecoder
from modelcore.tasks import Task
from modelcore.tokenization import Tokenizer
from modelcore.training.batching import BatchStream, encode_pairs
from modelcore.training.evaluate import evaluate
from modelcore.training.schedule import SCHEDULES, learning_rate
from modelcore.training.step import train_step


@dataclass
class TrainConfig:
    """One training run: the model preset and overrides, the optimiser, the schedule, the bookkeeping."""

    preset: str = "small"
    model: dict[str, Any] = field(default_factory=dict)  # ModelConfig fields that override the preset
    steps: int = 2000
    batch_size: int = 64  # sentence pairs per step
    # Similar lengths in a batch waste less on padding; off, each batch mixes lengths (steadier gradients).
    length_bucketing: bool = True
    schedule: str = "noam"
    warmup_steps: int = 400  # the paper's 4000 is for 100k steps; toy runs are ~20x shorter
    lr_factor: float = 1.0  # noam: the paper's formula times this
    lr: float = 1e-3  # constant schedule only
    betas: tuple[float, float] = (0.9, 0.98)  # the paper's, section 5.3
    eps: float = 1e-9
    label_smoothing: float = 0.1
    clip_grad_norm: float = 1.0  # 0 turns clipping off
    eval_every: int = 500  # 0: only at the end
    eval_size: int = 500  # validation pairs per periodic evaluation (the end uses all of them)
    checkpoint_every: int = 500  # 0: only at the end (and when stopped)
    log_every: int = 10  # training-loss points kept in metrics.json
    seed: int = 0
    device: str | None = None  # "auto" | "cpu" | "cuda"; None: $MODELCORE_DEVICE, else "auto"

    def __post_init__(self) -> None:
        self.betas = tuple(self.betas)  # JSON gives a list back
        if self.preset not in PRESETS:
            raise ValueError(f"unknown preset {self.preset!r} (choose from: {', '.join(PRESETS)})")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {self.schedule!r} (choose from: {', '.join(SCHEDULES)})")
        for name in ("steps", "batch_size", "warmup_steps", "eval_size", "log_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("eval_every", "checkpoint_every", "seed"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, got {getattr(self, name)}")
        for name in ("lr", "lr_factor", "eps"):
            if not getattr(self, name) > 0 or not math.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be a positive number, got {getattr(self, name)}")
        if not 0 <= self.label_smoothing < 1 or not self.clip_grad_norm >= 0:
            raise ValueError("label_smoothing must be in [0, 1) and clip_grad_norm >= 0")
        ModelConfig.check(self.preset, **self.model)  # a bad size fails here, not after the data is built

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class StepInfo:
    """What the per-step callback sees (progress bars, live curves)."""

    step: int
    steps: int
    loss: float
    lr: float
    grad_norm: float
    tokens_per_s: float
    elapsed_s: float
    epoch: int
    eval: dict[str, Any] | None = None  # set on the steps that evaluated


@dataclass
class TrainResult:
    """Where the model went and how the run ended."""

    out_dir: Path
    step: int
    stopped: bool
    metrics: dict[str, Any]


def _model_config(config: TrainConfig, src: Tokenizer, tgt: Tokenizer) -> ModelConfig:
    return ModelConfig.from_preset(
        config.preset, src_vocab_size=src.vocab_size, tgt_vocab_size=tgt.vocab_size, **config.model
    )


@contextmanager
def _denormals_flushed() -> Iterator[None]:
    """Flush float32 denormals to zero while training, and only then.

    Adam's second moments of rarely used embedding rows decay into denormals, which x86 CPUs
    compute ~20x slower: a run stalled for minutes per 100 steps until they were flushed. The
    setting is process-wide, so it is undone afterwards (torch has no getter; off is its default).
    """
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)


@_denormals_flushed()
def train(
    task: Task,
    out_dir: str | Path,
    config: TrainConfig | None = None,
    *,
    on_step: Callable[[StepInfo], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    resume: bool = True,
) -> TrainResult:
    """Train on task.train into out_dir; with resume, continue a run that out_dir holds, bit for bit."""
    config = config or TrainConfig()
    out_dir = Path(out_dir)
    device = resolve_device(config.device)
    torch.manual_seed(config.seed)
    resuming = resume and has_train_state(out_dir)
    if resuming:
        loaded = load_model(out_dir, device=device)
        model, src_tok, tgt_tok = loaded.model, loaded.src_tokenizer, loaded.tgt_tokenizer
    else:
        src_tok, tgt_tok = task.build_tokenizers()
        model = EncoderDecoder(_model_config(config, src_tok, tgt_tok)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=config.betas, eps=config.eps)
    state: dict[str, Any] = {"step": 0, "epoch": 0, "index": 0, "history": [], "evals": [], "train_seconds": 0.0}
    if resuming:
        state = load_train_state(out_dir, optimizer, model)
        if state.get("task") != task.name:
            raise CheckpointError(f"{out_dir} holds a run on task {state.get('task')!r}, not {task.name!r}")
    examples = encode_pairs(task.train, src_tok, tgt_tok, model.config.max_len)
    stream = BatchStream(
        examples, config.batch_size, config.seed, state["epoch"], state["index"], config.length_bucketing
    )
    valid_sample = task.valid[: config.eval_size]

    def checkpoint(metrics: dict[str, Any] | None = None) -> None:
        save_model(out_dir, model, src_tok, tgt_tok, metrics or _metrics(task, model, config, state))
        save_train_state(
            out_dir, optimizer, {**state, **stream.position(), "task": task.name, "train": config.to_dict()}, model
        )

    model.train()
    step, stopped, started = state["step"], False, time.perf_counter()
    seconds_before = state["train_seconds"]
    while step < config.steps:
        step += 1
        tick = time.perf_counter()
        lr = learning_rate(
            step, schedule=config.schedule, d_model=model.config.d_model, warmup_steps=config.warmup_steps,
            lr=config.lr, lr_factor=config.lr_factor,
        )
        batch = stream.next().to(device)
        outcome = train_step(model, optimizer, batch, lr=lr, label_smoothing=config.label_smoothing,
                             clip_grad_norm=config.clip_grad_norm)
        loss_value, elapsed = outcome.loss, time.perf_counter() - tick
        state.update(step=step, train_seconds=seconds_before + time.perf_counter() - started)
        if step % config.log_every == 0 or step == 1:
            state["history"].append({"step": step, "loss": round(loss_value, 5), "lr": lr})
        result = None
        if config.eval_every and step % config.eval_every == 0 and step < config.steps:
            result = {"step": step, **evaluate(model, valid_sample, src_tok, tgt_tok)}
            state["evals"].append(result)
        if on_step is not None:
            on_step(StepInfo(step, config.steps, loss_value, lr, float(outcome.grad_norm or 0.0), batch.n_tokens / elapsed,
                             state["train_seconds"], stream.epoch, result))
        if should_stop is not None and should_stop():
            stopped = True
            break
        if config.checkpoint_every and step % config.checkpoint_every == 0 and step < config.steps:
            checkpoint()
    metrics = _metrics(task, model, config, state)
    if not stopped:
        metrics["valid"] = evaluate(model, task.valid, src_tok, tgt_tok)
        metrics["test"] = evaluate(model, task.test, src_tok, tgt_tok)
    checkpoint(metrics)
    return TrainResult(out_dir, step, stopped, metrics)


def _metrics(task: Task, model: EncoderDecoder, config: TrainConfig, state: dict[str, Any]) -> dict[str, Any]:
    return {
        "task": task.name,
        "task_options": getattr(task, "options", {}),
        "model": model.config.to_dict(),
        "parameters": sum(p.numel() for p in model.parameters()),
        "train": config.to_dict(),
        "step": state["step"],
        "train_seconds": round(state["train_seconds"], 1),
        "torch_threads": torch.get_num_threads(),
        "device": str(next(model.parameters()).device),
        "history": state["history"],
        "evals": state["evals"],
    }
