"""The experiments by name: canonical parameters (what results are keyed by) and one entry point to run them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from modelcore.experiments.activations import (
    decoder_input,
    encode_sentence,
    mean_drift,
    norm_statistics,
    representation_drift,
)
from modelcore.experiments.compare import compare_runs
from modelcore.experiments.gradients import gradient_norms_at_init
from modelcore.experiments.runs import build_probe, probe_task, train_probe
from modelcore.experiments.spec import INIT_VOCAB, RunConfig, arms_of, canonical_params
from modelcore.model import EncoderDecoder

Progress = Callable[[dict[str, Any]], None]
ShouldStop = Callable[[], bool]

def run_experiment(
    kind: str, params: dict[str, Any], *, on_progress: Progress | None = None, should_stop: ShouldStop | None = None
) -> dict[str, Any]:
    """Run one experiment; on_progress receives {"progress": 0..1, ...} as it goes."""
    params = canonical_params(kind, params)
    report = on_progress or (lambda _info: None)
    runner = {"gradflow": _gradflow, "compare": _compare, "drift": _drift, "norms": _norms, "sweep": _sweep}[kind]
    return {"kind": kind, "params": params, **runner(params, report, should_stop)}


def _run_config(params: dict[str, Any]) -> RunConfig:
    return RunConfig.from_dict({k: v for k, v in params.items() if k in RunConfig.__dataclass_fields__})


def _gradflow(params: dict[str, Any], report: Progress, _stop: ShouldStop | None) -> dict[str, Any]:
    config = _run_config(params).model_config(INIT_VOCAB, INIT_VOCAB)
    seeds = range(params["seed"], params["seed"] + params["seeds"])
    report({"progress": 0.0})
    result = gradient_norms_at_init(config, seeds=tuple(seeds))
    report({"progress": 1.0})
    return result


def _compare(params: dict[str, Any], report: Progress, should_stop: ShouldStop | None) -> dict[str, Any]:
    config = _run_config(params)
    labels = [label for label, _ in arms_of(config, params["switch"])]

    def on_step(label: str, info: dict[str, Any]) -> None:
        done = labels.index(label) * info["steps"] + info["step"]
        report({"progress": done / (len(labels) * info["steps"]), "arm": label, **info})

    return compare_runs(config, params["switch"], on_step=on_step, should_stop=should_stop)


def _sweep(params: dict[str, Any], report: Progress, should_stop: ShouldStop | None) -> dict[str, Any]:
    """A comparison's arms with `seeds` seeds each, each arm's seeds trained stacked (modelcore.experiments.sweep):
    a switch's two, or a named comparison's (the lesson's mask and FFN widths, the depths)."""
    from modelcore.experiments.comparisons import COMPARISONS, Arm, comparison_arms
    from modelcore.experiments.sweep import sweep_arms

    config, name = _run_config(params), params["switch"]
    arms = comparison_arms(name, config) if name in COMPARISONS else tuple(
        Arm(label, arm_config) for label, arm_config in arms_of(config, name))
    seeds = range(params["seed"], params["seed"] + params["seeds"])
    result = sweep_arms(arms, seeds, on_progress=report, should_stop=should_stop)
    return {"switch": params["switch"], "config": config.to_dict(), **result}


def _drift(params: dict[str, Any], report: Progress, _stop: ShouldStop | None) -> dict[str, Any]:
    config = _run_config(params).replace(task="zh-en", n_train=2000)
    probe = build_probe(config)
    src, tokens = encode_sentence(probe.src_tokenizer, params["sentence"])
    arms = []
    for i, residual in enumerate((True, False)):
        drifts = []
        for seed in range(params["seed"], params["seed"] + params["seeds"]):
            model = _fresh_model(config.replace(residual=residual, seed=seed), probe.src_tokenizer.vocab_size,
                                 probe.tgt_tokenizer.vocab_size)
            drifts.append(representation_drift(model, src))
        arms.append({"label": "residual" if residual else "no residual", "residual": residual, **mean_drift(drifts)})
        report({"progress": (i + 1) / 2})
    return {"tokens": tokens, "arms": arms}


def _fresh_model(config: RunConfig, src_vocab_size: int, tgt_vocab_size: int) -> EncoderDecoder:
    torch.manual_seed(config.seed)
    return EncoderDecoder(config.model_config(src_vocab_size, tgt_vocab_size)).eval()


def _norms(params: dict[str, Any], report: Progress, should_stop: ShouldStop | None) -> dict[str, Any]:
    config = _run_config(params)
    task = probe_task(config)
    arms = []
    labels = [label for label, _ in arms_of(config, "norm")]
    for i, (label, arm_config) in enumerate(arms_of(config, "norm")):
        probe = build_probe(arm_config, task)
        src, src_tokens = encode_sentence(probe.src_tokenizer, params["sentence"])
        tgt = decoder_input(probe.tgt_tokenizer, params["target"])
        at_init = norm_statistics(probe.model, src, tgt)

        def on_step(info: dict[str, Any], i: int = i, label: str = label) -> None:
            report({"progress": (i * info["steps"] + info["step"]) / (len(labels) * info["steps"]), "arm": label, **info})

        run = train_probe(arm_config, probe=probe, on_step=on_step, should_stop=should_stop)
        trained = norm_statistics(probe.model, src, tgt)
        arms.append({"label": label, "run": run, "init": at_init, "trained": trained})
    tgt_tokens = ["<bos>", *probe.tgt_tokenizer.tokens(params["target"])]
    return {"src_tokens": src_tokens, "tgt_tokens": tgt_tokens, "arms": arms}
