"""What an experiment is, without torch: probe run settings, the comparison switches, the kinds and their
canonical parameters. The web process validates and keys requests with these; the workers run them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from modelcore.config import KNOBS, PRESETS, ModelConfig, model_overrides, reject_unknown_keys

SAMPLE_SOURCE = "三个聪明的女孩喝五瓶水。"  # a sentence of the zh-en task's grammar
SAMPLE_TARGET = "three clever girls drink five bottles of water ."

PROBE_TASKS = ("reverse", "copy", "sort", "add", "zh-en")
PROBE_KNOBS = tuple(name for name in KNOBS if name != "dropout")  # a probe keeps dropout at 0


@dataclass(frozen=True)
class RunConfig:
    """One probe run: the task, the model's size and switches, and a plain Adam with optional linear warmup."""

    task: str = "reverse"
    n_train: int = 4000  # a few thousand pairs: enough that a few hundred steps rarely repeat a batch
    # The model's knobs (PROBE_KNOBS), checked by ModelConfig's own rules.
    layers: int = 6  # encoder and decoder alike: deep enough that Post-LN's trouble shows
    d_model: int = PRESETS["tiny"]["d_model"]
    n_heads: int = PRESETS["tiny"]["n_heads"]
    d_ff: int = PRESETS["tiny"]["d_ff"]
    norm_position: str = "post"
    norm: str = "layernorm"
    residual: bool = True
    steps: int = 300
    batch_size: int = 32
    lr: float = 3e-3  # the peak rate; constant after warmup (no decay), so arms differ only in the switch
    warmup_steps: int = 0  # linear from lr/warmup_steps to lr over this many steps; 0: the full rate from step 1
    betas: tuple[float, float] = (0.9, 0.98)  # the paper's
    seed: int = 0
    eval_every: int = 50
    eval_size: int = 100  # validation pairs per evaluation
    record_every: int = 5  # steps between per-layer gradient-norm snapshots (the heatmap's rows)
    # A loss this many times ln(vocab) (the loss of a uniform guess) counts as a blow-up and stops the run.
    blowup_factor: float = 3.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "betas", tuple(self.betas))  # JSON gives a list back
        if self.task not in PROBE_TASKS:
            raise ValueError(f"unknown task {self.task!r} (choose from: {', '.join(PROBE_TASKS)})")
        for name in ("n_train", "steps", "batch_size", "eval_size", "record_every", "eval_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.warmup_steps < 0 or self.seed < 0:
            raise ValueError("warmup_steps and seed must not be negative")
        if not (self.lr > 0 and math.isfinite(self.lr)) or not self.blowup_factor > 1:
            raise ValueError("lr must be a positive number and blowup_factor more than 1")
        self.model_config(1, 1)  # the model's knobs, checked by the model's own rules

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "betas": list(self.betas)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        reject_unknown_keys(cls, data, "run config")
        return cls(**data)

    def replace(self, **changes: Any) -> RunConfig:
        return dataclasses.replace(self, **changes)

    def model_config(self, src_vocab_size: int, tgt_vocab_size: int) -> ModelConfig:
        knobs = {name: getattr(self, name) for name in PROBE_KNOBS}
        return ModelConfig(
            src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size,
            dropout=0.0,  # a probe compares switches; dropout noise would only blur the curves
            **model_overrides(**knobs),
        )

    def rate(self, step: int) -> float:
        """Learning rate at 1-based step: linear warmup to lr, then constant."""
        if self.warmup_steps and step < self.warmup_steps:
            return self.lr * step / self.warmup_steps
        return self.lr


# switch -> the two arms: (label, the RunConfig fields that arm sets)
SWITCHES: dict[str, Callable[[RunConfig], tuple[tuple[str, dict[str, Any]], ...]]] = {
    "norm_position": lambda c: (("post", {"norm_position": "post"}), ("pre", {"norm_position": "pre"})),
    "residual": lambda c: (("residual", {"residual": True}), ("no residual", {"residual": False})),
    # The warmup arm keeps the run's warmup_steps, or a fifth of the run when it has none.
    "warmup": lambda c: (
        ("warmup", {"warmup_steps": c.warmup_steps or max(1, c.steps // 5)}),
        ("no warmup", {"warmup_steps": 0}),
    ),
    "norm": lambda c: (("layernorm", {"norm": "layernorm"}), ("rmsnorm", {"norm": "rmsnorm"})),
}


def arms_of(config: RunConfig, switch: str) -> list[tuple[str, RunConfig]]:
    """The two configurations of a comparison, labelled."""
    if switch not in SWITCHES:
        raise ValueError(f"unknown switch {switch!r} (choose from: {', '.join(SWITCHES)})")
    return [(label, config.replace(**fields)) for label, fields in SWITCHES[switch](config)]


KINDS = ("gradflow", "compare", "drift", "norms", "sweep")
MODEL_FIELDS = (*PROBE_KNOBS, "seed")  # what a measurement at initialisation depends on
INIT_VOCAB = 1000  # random-token vocabulary of the measurements at initialisation
MAX_SEEDS = 10
# A sweep: a comparison's arms, each with several seeds trained together (modelcore.experiments.sweep); one
# seed is a "compare" run. The launch form offers 4, 8 and 16.
SWEEP_SEEDS = (4, 8, 16)
# A sweep of one seed: a student's own seed of a class's comparison, merged into the class's sweep when it finishes
# (webapp/classroom/steps/seeds.py). It has no verdict of its own (one seed has no spread).
LONE_SEED = 1
# Comparisons a sweep trains besides the switches (modelcore.experiments.comparisons): the lesson's causal mask and
# FFN widths, and the depths. Each one's varied setting is the arms' to choose, as a switch's is.
SWEEP_ONLY: dict[str, dict[str, Any]] = {"mask": {}, "ffn": {"d_ff": "d_model"}, "depth": {"layers": 6}}
MAX_SENTENCE_CHARS = 200

def canonical_params(kind: str, params: dict[str, Any]) -> dict[str, Any]:
    """Every parameter the result depends on, defaults filled in; raises ValueError on anything invalid."""
    if kind not in KINDS:
        raise ValueError(f"unknown experiment {kind!r} (choose from: {', '.join(KINDS)})")
    extras = {"gradflow": {"seeds": 3}, "compare": {"switch": "norm_position"},
              "sweep": {"switch": "norm_position", "seeds": SWEEP_SEEDS[1]},
              "drift": {"seeds": 3, "sentence": SAMPLE_SOURCE},
              "norms": {"sentence": SAMPLE_SOURCE, "target": SAMPLE_TARGET}}[kind]
    unknown = sorted(set(params) - set(RunConfig.__dataclass_fields__) - set(extras))
    if unknown:
        raise ValueError(f"unknown parameters for {kind}: {', '.join(unknown)}")
    base = {"task": "zh-en", "steps": 200} if kind == "norms" else {}
    config = RunConfig.from_dict({**base, **{k: v for k, v in params.items() if k not in extras}})
    chosen = {**extras, **{k: v for k, v in params.items() if k in extras}}
    _check_extras(chosen, kind)
    switch = chosen.get("switch") or ("norm" if kind == "norms" else None)
    if switch in SWEEP_ONLY:  # its first arm's setting, as for a switch below
        fields = SWEEP_ONLY[switch]
        config = config.replace(**{k: getattr(config, v) if isinstance(v, str) else v for k, v in fields.items()})
    elif switch:
        # The switched setting is the arms' to choose: keep the first arm's, so that requests
        # differing only in it (e.g. post or pre for a post-against-pre run) share one result.
        config = arms_of(config, switch)[0][1]
    run_fields = config.to_dict()
    if kind in ("gradflow", "drift"):
        run_fields = {k: run_fields[k] for k in MODEL_FIELDS}
    return {**run_fields, **chosen}


def _check_extras(extras: dict[str, Any], kind: str) -> None:
    seeds = extras.get("seeds", 1)
    if kind == "sweep":
        if isinstance(seeds, bool) or seeds not in (LONE_SEED, *SWEEP_SEEDS):
            raise ValueError(f"a sweep's seeds must be one of {', '.join(map(str, (LONE_SEED, *SWEEP_SEEDS)))}, "
                             f"got {seeds!r}")
    elif isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= MAX_SEEDS:
        raise ValueError(f"seeds must be an integer in 1..{MAX_SEEDS}, got {seeds!r}")
    switches = (*SWITCHES, *SWEEP_ONLY) if kind == "sweep" else tuple(SWITCHES)
    if "switch" in extras and extras["switch"] not in switches:
        raise ValueError(f"unknown switch {extras['switch']!r} (choose from: {', '.join(switches)})")
    for name in ("sentence", "target"):
        text = extras.get(name, "x")
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_SENTENCE_CHARS:
            raise ValueError(f"{name} must be a non-empty text of at most {MAX_SENTENCE_CHARS} characters")
