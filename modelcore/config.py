"""The one model configuration (ModelConfig) and its named presets."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

NORM_POSITIONS = ("post", "pre")
NORMS = ("layernorm", "rmsnorm")
CHOICES: dict[str, tuple[str, ...]] = {"norm_position": NORM_POSITIONS, "norm": NORMS}
# The knobs the lesson turns (forms, the CLI, probe runs): ModelConfig fields, with `layers` for both stacks.
KNOBS = ("layers", "d_model", "n_heads", "d_ff", "norm_position", "norm", "residual", "dropout")


class ConfigError(ValueError):
    """A field out of bounds: `field` names it and `code` says how, so a form can word it in its own language."""

    def __init__(self, message: str, *, field: str, code: str) -> None:
        super().__init__(message)
        self.field, self.code = field, code


@dataclass(frozen=True)
class ModelConfig:
    """Sizes and switches of one encoder-decoder; everything a checkpoint needs to rebuild it."""

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 512
    n_heads: int = 8
    d_ff: int = 2048
    n_encoder_layers: int = 6
    n_decoder_layers: int = 6
    dropout: float = 0.1
    # Longest sequence the sinusoidal table covers; the table is not saved, so raising it later is free.
    max_len: int = 512
    # "post": x = LN(x + F(x)) as in Vaswani et al. 2017; "pre": x = x + F(LN(x)), one final norm per stack.
    norm_position: str = "post"
    norm: str = "layernorm"
    # Off only for the residual ablation experiment: x = LN(F(x)) / x = F(LN(x)).
    residual: bool = True
    # Shares the target embedding with the generator (the paper also shares the source; our vocabs differ).
    tie_embeddings: bool = False
    # Shares the source embedding with the target's: one vocabulary for both sides, as the paper's shared BPE.
    # With tie_embeddings too, all three matrices are one (the paper's three-way tying, section 3.4).
    share_embeddings: bool = False

    def __post_init__(self) -> None:
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "d_ff", "max_len",
                     "n_encoder_layers", "n_decoder_layers"):
            _require_int(name, getattr(self, name), minimum=1)
        if self.d_model % self.n_heads:
            raise ConfigError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})",
                              field="n_heads", code="heads")
        if not isinstance(self.dropout, int | float) or not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout!r}", field="dropout", code="range")
        for name, choices in CHOICES.items():
            if getattr(self, name) not in choices:
                raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {getattr(self, name)!r}",
                                  field=name, code="choice")
        for name in ("residual", "tie_embeddings", "share_embeddings"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false", field=name, code="bool")
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ConfigError(f"share_embeddings needs one vocabulary for both sides, got {self.src_vocab_size} "
                              f"source and {self.tgt_vocab_size} target tokens", field="share_embeddings", code="vocab")

    @property
    def d_k(self) -> int:
        """Width of one attention head."""
        return self.d_model // self.n_heads

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        """Rebuild from to_dict() output; unknown keys are an error, not silently dropped."""
        reject_unknown_keys(cls, data, "model config")
        return cls(**data)

    @classmethod
    def from_preset(cls, name: str, *, src_vocab_size: int, tgt_vocab_size: int, **overrides: Any) -> ModelConfig:
        """A preset's sizes with the vocabularies filled in and any field overridden."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r} (choose from: {', '.join(PRESETS)})")
        fields = {**PRESETS[name], **overrides}
        return cls(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size, **fields)

    def replace(self, **changes: Any) -> ModelConfig:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def check(cls, preset: str = "tiny", **overrides: Any) -> None:
        """Raise ConfigError (a ValueError) when a preset with these overrides is no valid model."""
        cls.from_preset(preset, src_vocab_size=1, tgt_vocab_size=1, **overrides)


def reject_unknown_keys(cls: type, data: dict[str, Any], what: str) -> None:
    """A ValueError naming every key of data that is no field of the dataclass cls (nothing silently dropped)."""
    unknown = sorted(set(data) - {f.name for f in dataclasses.fields(cls)})
    if unknown:
        raise ValueError(f"unknown {what} keys: {', '.join(unknown)}")


def model_overrides(*, layers: int | None = None, **fields: Any) -> dict[str, Any]:
    """ModelConfig fields from the lesson's knobs (KNOBS): `layers` sets both stacks; None leaves a field out."""
    reject_unknown_keys(ModelConfig, fields, "model config")
    overrides = {name: value for name, value in fields.items() if value is not None}
    if layers is not None:
        overrides.update(n_encoder_layers=layers, n_decoder_layers=layers)
    return overrides


def _require_int(name: str, value: object, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}", field=name, code="integer")


PRESETS: dict[str, dict[str, Any]] = {
    # Transformer base of Vaswani et al. 2017, Table 3.
    "paper": dict(d_model=512, n_heads=8, d_ff=2048, n_encoder_layers=6, n_decoder_layers=6, dropout=0.1),
    # The shipped zh-en models: BLEU > 90 after minutes on two CPU cores. d_ff is 2 x d_model,
    # not the paper's 4 x, so that a float32 file stays under 5 MB.
    "small": dict(d_model=128, n_heads=4, d_ff=256, n_encoder_layers=3, n_decoder_layers=3, dropout=0.1),
    # Algorithmic tasks and tests: a few hundred steps suffice on a CPU.
    "tiny": dict(d_model=64, n_heads=4, d_ff=256, n_encoder_layers=2, n_decoder_layers=2, dropout=0.0),
}
