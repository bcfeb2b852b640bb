"""The training loop: teacher forcing, Adam with the paper's schedule, checkpoints that resume exactly."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
from modelcore.config import ModelConfig
from modelcore.device import resolve_device
from modelcore.model import EncoderDecoder
from modelcore.tasks import Task
from modelcore.tokenization import Tokenizer
from modelcore.training.batching import BatchStream, encode_pairs
from modelcore.training.config import StepInfo, TrainConfig, TrainResult
from modelcore.training.evaluation import evaluate
from modelcore.training.schedule import learning_rate
from modelcore.training.step import train_step


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
        src_tok, tgt_tok = task.build_tokenizers(shared=bool(config.model.get("share_embeddings")))
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
            lr=config.lr, lr_factor=config.lr_factor, steps=config.steps,
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
