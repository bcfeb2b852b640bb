"""How far to trust one output: a sentence-level confidence from the model's own numbers, and warnings.

Each step of a decode gives the chosen token's log-probability, the entropy of the step's distribution
and the gap between its two most likely tokens (StepStat). A sentence sums them up into a few features,
beside some of its source: its length, the share of its words never seen in training, and how close it is to
the nearest training sources (`nearest`, modelcore.decoding.words.SourceIndex);
a model whose folder holds a calibration (calibration.json, fitted by scripts/confidence_calibration.py
on held-out sentences) turns them into the probability that the output is good, by logistic regression,
and warns below the fitted threshold. Without one, the confidence is the geometric mean of the token
probabilities, and the threshold 0.5 is a guess (the calibration file says which).

Warnings (codes, in this order): `low_confidence` (the confidence is below the threshold: the calibration's, or,
where the source-word check runs and its rule was fitted with this calibration, the rule's, which depends on
whether the check finds a word missing), `repetition`
(the output ran to the length limit, or repeats itself: one token three times in a row, or a group of
two to four tokens twice in a row), `unknown_words` (the source holds words never seen in training), then the
source-word check's `dropped_words` and `negation_lost` (modelcore.decoding.coverage: a Chinese source's word or
negation the English output does not say) with each checked word in `coverage`.

Torch-free: the web process reads calibrations with it too.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from modelcore.decoding.coverage import Rule
    from modelcore.decoding.words import SourceIndex

CALIBRATION_FILE = "calibration.json"  # in the model's folder; scripts/confidence_calibration.py writes it
WARNINGS = ("low_confidence", "repetition", "unknown_words")
# The source-word check's warnings (modelcore.decoding.coverage), after these, when a Chinese source's words are lost.
COVERAGE_WARNINGS = ("dropped_words", "negation_lost")
CLOSE_MARGIN = 0.2  # a step whose two most likely tokens are closer than this in probability is a near-tie
# Every feature a calibration may weigh; scripts/confidence_calibration.py chooses among them by cross-validation.
# `nearest` exists only for a model whose training sources can be rebuilt (not one trained on an uploaded corpus).
FEATURES = ("mean_logprob", "min_logprob", "mean_entropy", "max_entropy", "mean_margin", "close_share",
            "length_ratio", "src_len", "unknown_share", "looped", "nearest")
DEFAULT_THRESHOLD = 0.5  # uncalibrated: a guess, and the calibration file says so


@dataclass(frozen=True)
class StepStat:
    """One step of the model's own choice (a forced token is none): what the sentence's confidence reads."""

    logprob: float  # of the chosen token (<eos> included)
    entropy: float  # of the step's distribution, in nats
    margin: float  # probability of the most likely token minus the second's


def repeats(ids: Sequence[int]) -> bool:
    """A loop: one token three times in a row, or a group of 2-4 tokens twice in a row ("in the north in the north")."""
    for i in range(len(ids) - 2):
        if ids[i] == ids[i + 1] == ids[i + 2]:
            return True
    for size in range(2, 5):
        for i in range(len(ids) - 2 * size + 1):
            if ids[i : i + size] == ids[i + size : i + 2 * size]:
                return True
    return False


def sentence_features(
    steps: Sequence[StepStat], *, out_len: int, src_len: int, unknown_share: float, looped: bool,
    nearest: float | None = None,
) -> dict[str, float]:
    """The numbers a confidence is computed from (FEATURES), for one output; `nearest` only when it is known."""
    if not steps:  # a forced output, or nothing decoded: nothing the model chose
        steps = [StepStat(0.0, 0.0, 1.0)]
    n = len(steps)
    features = {
        "mean_logprob": sum(s.logprob for s in steps) / n,
        "min_logprob": max(min(s.logprob for s in steps), -30.0),  # a banned token's -inf would end any fit
        "mean_entropy": sum(s.entropy for s in steps) / n,
        "max_entropy": max(s.entropy for s in steps),
        "mean_margin": sum(s.margin for s in steps) / n,
        "close_share": sum(s.margin < CLOSE_MARGIN for s in steps) / n,
        "length_ratio": math.log((out_len + 1) / max(src_len, 1)),
        "src_len": math.log(max(src_len, 1)),  # source tokens, <eos> included
        "unknown_share": unknown_share,
        "looped": float(looped),
    }
    if nearest is not None:
        features["nearest"] = nearest
    return features


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


@dataclass(frozen=True)
class Calibration:
    """Features -> confidence, and the threshold below which an output is warned."""

    weights: Mapping[str, float] = field(default_factory=dict)  # logistic regression on FEATURES; empty: uncalibrated
    bias: float = 0.0
    threshold: float = DEFAULT_THRESHOLD
    checkpoint_hash: str = ""  # the weights it was fitted for

    @property
    def fitted(self) -> bool:
        return bool(self.weights)

    def applies_to(self, features: Mapping[str, float]) -> bool:
        """Every feature it weighs is known for this output."""
        return all(name in features for name in self.weights)

    def confidence(self, features: Mapping[str, float]) -> float:
        """0-1: fitted, the probability that the output is good; uncalibrated, the geometric mean token probability."""
        if not self.fitted:
            return math.exp(features["mean_logprob"])
        return _sigmoid(self.bias + sum(w * features[name] for name, w in self.weights.items()))

    def to_dict(self) -> dict[str, Any]:
        return {"weights": dict(self.weights), "bias": self.bias, "threshold": self.threshold,
                "checkpoint_hash": self.checkpoint_hash}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Calibration:
        weights = {str(k): float(v) for k, v in dict(data.get("weights") or {}).items()}
        if unknown := set(weights) - set(FEATURES):
            raise ValueError(f"calibration: unknown features {sorted(unknown)}")
        threshold = float(data.get("threshold", DEFAULT_THRESHOLD))
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"calibration: threshold {threshold} is not in 0..1")
        return cls(weights, float(data.get("bias", 0.0)), threshold, str(data.get("checkpoint_hash", "")))


def read_calibration(folder: str | Path, checkpoint_hash: str) -> Calibration:
    """The folder's calibration when it was fitted for these weights; otherwise the uncalibrated default."""
    path = Path(folder) / CALIBRATION_FILE
    if not path.is_file():
        return Calibration()
    data = json.loads(path.read_text(encoding="utf-8"))
    calibration = Calibration.from_dict(data.get("calibration") or {})
    if calibration.checkpoint_hash != checkpoint_hash:  # retrained since: its figures say nothing of these weights
        return Calibration()
    return calibration


@dataclass(frozen=True)
class Judgement:
    """What the done event says of its output: how sure, and what to beware of."""

    confidence: float
    warnings: list[str]
    unknown_words: list[str]
    features: dict[str, float]
    threshold: float = DEFAULT_THRESHOLD  # low_confidence below this (the calibration's, or the check's rule's)
    calibrated: bool = False  # the confidence comes from a calibration fitted for these weights
    coverage: list[dict[str, Any]] | None = None  # each checked source word (coverage.WordCheck); None: not checked

    def to_dict(self) -> dict[str, Any]:
        return {"confidence": round(self.confidence, 4), "warnings": list(self.warnings),
                "unknown_words": list(self.unknown_words), "confidence_threshold": round(self.threshold, 4),
                "calibrated": self.calibrated, "coverage": self.coverage}


@dataclass(frozen=True)
class Judge:
    """A model's calibration, the source words it saw in training and its training sources (None: not known,
    not checked)."""

    calibration: Calibration = field(default_factory=Calibration)
    known_words: frozenset[str] | None = None
    sources: SourceIndex | None = None
    coverage_rule: Rule | None = None  # the source-word check's fitted rule; None: its default

    def judge(
        self, *, steps: Sequence[StepStat], ids: Sequence[int], reason: str, src_len: int, source: str | None,
        text: str | None = None,
    ) -> Judgement:
        """The judgement of one finished output (`ids` without <eos>, `src_len` the source ids with its <eos>,
        `text` the output's text: a Chinese source and an English text get the source-word check too)."""
        unknown: list[str] = []
        share = 0.0
        if source is not None and self.known_words is not None:
            from modelcore.decoding.words import is_known, segment

            words = segment(source)
            new = [w for w in words if not is_known(w, self.known_words)]
            unknown = list(dict.fromkeys(new))
            share = len(new) / len(words) if words else 0.0
        looped = reason == "max_len" or repeats(ids)
        nearest = self.sources.nearest(source) if source is not None and self.sources is not None else None
        features = sentence_features(steps, out_len=len(ids), src_len=src_len, unknown_share=share, looped=looped,
                                     nearest=nearest)
        # A calibration weighing a feature this output lacks (no source text given) says nothing of it.
        calibration = self.calibration if self.calibration.applies_to(features) else Calibration()
        confidence = calibration.confidence(features)
        threshold = calibration.threshold
        checked = None
        from modelcore.decoding import coverage as word_check

        if word_check.applies(source, text):
            assert source is not None and text is not None
            checked = word_check.check(source, text, rule=self.coverage_rule)
            joint = checked.confidence_threshold()
            if calibration.fitted and joint is not None:  # fitted with the check's rule, for this calibration
                threshold = joint
        warnings = [code for code, on in zip(
            WARNINGS, (confidence < threshold, looped, bool(unknown)), strict=True) if on]
        if checked is not None:
            warnings += checked.warnings()
        return Judgement(confidence, warnings, unknown, features, threshold, calibration.fitted,
                         None if checked is None else checked.to_list())


_judges: dict[tuple[str, str], Judge] = {}
_judges_lock = threading.Lock()


def judge_for(*, folder: str | Path, checkpoint_hash: str, metrics: Mapping[str, Any]) -> Judge:
    """The judge of a model folder, built once per folder and weights (its training side once per task)."""
    key = (str(Path(folder).resolve()), checkpoint_hash)
    with _judges_lock:  # one build per model, however many lanes of a worker open a decoder at once
        if key not in _judges:
            from modelcore.decoding.coverage import read_rule
            from modelcore.decoding.words import training_side

            side = training_side(metrics)
            _judges[key] = Judge(read_calibration(folder, checkpoint_hash),
                                 None if side is None else side.words, None if side is None else side.index,
                                 read_rule(folder, checkpoint_hash=checkpoint_hash))
        return _judges[key]
