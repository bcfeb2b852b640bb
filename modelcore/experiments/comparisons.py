"""Every training comparison the app shows, by name, without torch: what a sweep of seeds stacks.

An arm is one configuration (a RunConfig, and for the lesson's mask comparison whether the decoder is causal); a
sweep trains each arm's seeds stacked as one batched model (modelcore.experiments.sweep). Arms of different shapes
(the FFN widths, the depths) are stacked separately: seeds share a shape, arms need not.

The settings are the ones the pages train today: the lesson's `modelcore.lesson.training.BASE` (tests check the two
agree) and the experiments pages' probe (`webapp.experiments.pages.PROBE`, which modelcore cannot import).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from modelcore.experiments.spec import RunConfig, arms_of

# The lesson's two comparisons: a small model copying short sequences (modelcore.lesson.training.BASE).
LESSON_BASE = RunConfig(task="copy", n_train=2000, layers=2, d_model=32, n_heads=2, d_ff=128, norm_position="pre",
                        steps=300, batch_size=32, lr=3e-3, eval_size=100, seed=0)
FFN_WIDTHS = (1, 2, 4)  # d_ff as a multiple of d_model
# The experiments pages' probe run: reverse, 6+6 layers, d_model 64, constant rate 3e-3 (webapp.experiments.pages).
PROBE_BASE = RunConfig(task="reverse", layers=6, d_model=64, d_ff=256, steps=300, lr=3e-3)
DEPTHS = (6, 12, 24)  # the depth sweep's total depths L (Pre-LN, d_model 64, d_ff 256)


@dataclass(frozen=True)
class Arm:
    """One configuration of a comparison. `loop`: "lesson" (the lesson's loop, no divergence stop) or "probe"
    (the experiments' train_probe: a NaN or blown-up loss stops that seed)."""

    label: str
    config: RunConfig
    causal: bool = True
    loop: str = "probe"

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "config": self.config.to_dict(), "causal": self.causal, "loop": self.loop}


def _switched(name: str, base: RunConfig) -> tuple[Arm, ...]:
    return tuple(Arm(label, config) for label, config in arms_of(base, name))


def comparison_arms(name: str, base: RunConfig | None = None) -> tuple[Arm, ...]:
    """The arms of comparison `name`, from `base` (its page's settings when None); ValueError when unknown."""
    if name == "mask":
        config = base or LESSON_BASE
        return (Arm("causal mask", config, causal=True, loop="lesson"),
                Arm("no mask", config, causal=False, loop="lesson"))
    if name == "ffn":
        config = base or LESSON_BASE
        return tuple(Arm(f"d_ff = {w} × d_model", config.replace(d_ff=w * config.d_model), loop="lesson")
                     for w in FFN_WIDTHS)
    if name == "norm_position":
        return _switched("norm_position", base or PROBE_BASE)
    if name == "warmup":
        return _switched("warmup", base or PROBE_BASE.replace(norm_position="post"))
    if name == "residual":
        return _switched("residual", base or PROBE_BASE.replace(norm_position="pre"))
    if name == "depth":
        config = base or PROBE_BASE.replace(norm_position="pre")
        return tuple(Arm(f"L = {layers}", config.replace(layers=layers)) for layers in DEPTHS)
    raise ValueError(f"unknown comparison {name!r} (choose from: {', '.join(COMPARISONS)})")


COMPARISONS = ("mask", "ffn", "norm_position", "warmup", "residual", "depth")
