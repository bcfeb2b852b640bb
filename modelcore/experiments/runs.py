"""Probe training runs: train a small model while recording loss, validation and per-layer gradient norms."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from modelcore.experiments.gradients import layer_grad_norms
from modelcore.experiments.spec import RunConfig
from modelcore.model import EncoderDecoder
from modelcore.tasks import Task, get_task
from modelcore.tokenization import Tokenizer
from modelcore.training.batching import BatchStream, encode_pairs
from modelcore.training.evaluation import evaluate
from modelcore.training.step import train_step


def probe_task(config: RunConfig) -> Task:
    """The task of a run; the same config always gives the same pairs."""
    return get_task(config.task, seed=config.seed, n_train=config.n_train, n_valid=config.eval_size, n_test=0)


StepCallback = Callable[[dict[str, Any]], None]


@dataclass
class Probe:
    """A freshly initialised model with its task and tokenizers, ready to train."""

    config: RunConfig
    task: Task
    model: EncoderDecoder
    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer


def build_probe(config: RunConfig, task: Task | None = None) -> Probe:
    """Task, tokenizers and a model initialised from config.seed: the same config gives the same start."""
    task = task or probe_task(config)
    src_tok, tgt_tok = task.build_tokenizers()
    torch.manual_seed(config.seed)
    model = EncoderDecoder(config.model_config(src_tok.vocab_size, tgt_tok.vocab_size))
    return Probe(config, task, model, src_tok, tgt_tok)


def train_probe(
    config: RunConfig,
    *,
    probe: Probe | None = None,
    on_step: StepCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Train one model; a NaN or blown-up loss stops the run and marks it diverged instead of raising."""
    probe = probe or build_probe(config)
    model = probe.model
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr, betas=config.betas, eps=1e-9)
    examples = encode_pairs(probe.task.train, probe.src_tokenizer, probe.tgt_tokenizer, model.config.max_len)
    stream = BatchStream(examples, config.batch_size, config.seed)
    blowup = config.blowup_factor * math.log(probe.tgt_tokenizer.vocab_size)
    record: dict[str, Any] = {
        "config": config.to_dict(), "status": "completed", "diverged_at": None, "reason": "",
        "steps": [], "loss": [], "lr": [], "evals": [],
        "grad_norms": {"steps": [], "layers": [], "layer": [], "ffn.linear2": []},
    }
    started = time.perf_counter()
    model.train()
    for step in range(1, config.steps + 1):
        lr = config.rate(step)
        # A diverged step is not applied: every kept loss and gradient norm is a real number.
        outcome = train_step(model, optimizer, stream.next(), lr=lr, update_if=lambda loss: not _divergence(loss, blowup))
        value = outcome.loss
        if not outcome.updated:
            record.update(status="diverged", diverged_at=step, reason=_divergence(value, blowup))
            break
        _keep_step(record, step, value, lr, model, config)  # the gradients of this step are still in place
        evaluation = None
        if step % config.eval_every == 0 or step == config.steps:
            evaluation = _evaluate(probe, step)
            record["evals"].append(evaluation)
        if on_step is not None:
            on_step({"step": step, "steps": config.steps, "loss": value, "lr": lr, "eval": evaluation})
        if should_stop is not None and should_stop():
            record["status"] = "stopped"
            break
    model.eval()
    record["seconds"] = round(time.perf_counter() - started, 1)
    record["final_loss"] = final_loss(record["loss"])
    return record


def _divergence(loss: float, blowup: float) -> str:
    if not math.isfinite(loss):
        return "nan"
    if loss > blowup:
        return "blow-up"
    return ""


def _keep_step(record: dict[str, Any], step: int, loss: float, lr: float, model: EncoderDecoder,
               config: RunConfig) -> None:
    record["steps"].append(step)
    record["loss"].append(round(loss, 5))
    record["lr"].append(lr)
    if step == 1 or step % config.record_every == 0:
        rows = layer_grad_norms(model)
        norms = record["grad_norms"]
        norms["layers"] = norms["layers"] or [f"{r['stack']} {r['index'] + 1}" for r in rows]
        norms["steps"].append(step)
        norms["layer"].append([round(r["grad_norms"]["layer"], 6) for r in rows])
        norms["ffn.linear2"].append([round(r["grad_norms"]["ffn.linear2"], 6) for r in rows])


def _evaluate(probe: Probe, step: int) -> dict[str, Any]:
    # evaluate() puts the model back in training mode when it is done.
    result = evaluate(probe.model, probe.task.valid, probe.src_tokenizer, probe.tgt_tokenizer)
    return {"step": step, **{k: round(v, 5) if isinstance(v, float) else v for k, v in result.items()}}


def final_loss(losses: list[float]) -> float | None:
    """Mean training loss of the last tenth of the run (at least the last step): what 'it learned' reads."""
    if not losses:
        return None
    tail = losses[-max(1, len(losses) // 10) :]
    return round(statistics.fmean(tail), 5)
