"""Fit each zh-en model's output confidence and warning threshold on validation sentences, report on held-out ones.

    .venv/bin/python scripts/confidence_calibration.py zh-en-hsk zh-en-post zh-en-pre

Good and bad: an output is *good* when its sentence-level chrF (sacrebleu's sentence_chrf) against the human
translation is at least GOOD_CHRF (50), *bad* otherwise. Read at the cut, 50 and up is the right sentence or a
near one ("his house is large ." for "his house is big ."); under it the meaning is lost ("we bought those
materials ." for "we bought the same shoes .").

Fit: a logistic regression (L2, standardised features) of good on FIT_FEATURES of the greedy outputs of the hsk
task's validation sentences (196: the 4 whose reference is the package's stand-in "placeholder" are left out of the
fit and the report, as no output can match them), for a model trained with `tatoeba_holdout=1` half of the
Tatoeba sentences kept out of its training (about 1,000, each scored against every translation Tatoeba gives), and
200 of the zh-en grammar's validation sentences (the lesson's kind of sentence: the grammar models get no real sentence right, so the
real ones alone hold no good output to fit). Threshold: among the thresholds that warn at least 80 % of the
bad outputs of that set, the one that warns the fewest good ones, in the middle of its interval.
Report: the hsk task's 396 held-out real test sentences (and 200 of the grammar's test sentences, all good
for every model, and the other half of the held-out Tatoeba sentences), never seen by the fit: the area under the ROC curve of the confidence for telling good from
bad, and at the threshold the share of bad and of good outputs warned (`low_confidence`; and any warning).

Writes `calibration.json` into each model's folder (the decoder reads its `calibration`, the model card draws
its reliability diagram) and prints one line per model.

    .venv/bin/python scripts/confidence_calibration.py zh-en-hsk --select     # choose FIT_FEATURES and L2 again
    .venv/bin/python scripts/confidence_calibration.py zh-en-hsk --dry-run --features mean_logprob,min_logprob

`--select` chooses the features and the penalty on the validation sentences alone (never the test ones):
forward selection over modelcore.decoding.confidence.FEATURES, each candidate scored by the ROC AUC of
repeated, stratified 5-fold cross-validation on the real validation sentences (the grammar's validation
sentences always in the fit, as in the real fit); it prints the path and writes nothing.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import sacrebleu
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from modelcore.checkpoint import LoadedModel, load_model  # noqa: E402
from modelcore.decoding import decode  # noqa: E402
from modelcore.decoding.confidence import CALIBRATION_FILE, FEATURES, Calibration  # noqa: E402
from modelcore.tasks import get_task  # noqa: E402

GOOD_CHRF = 50.0
# Of modelcore.decoding.confidence.FEATURES, the ones used, and the penalty. Chosen first by 5-fold cross-validation
# on the first zh-en-hsk's validation sentences (AUC 0.862 for these three at L2 10). `--select` on the shipped
# zh-en-hsk's 200 real validation sentences (22 good) then preferred mean_logprob and nearest at L2 10 (AUC 0.872
# against 0.800 for these); `nearest`'s form (character trigrams, the mean of the closest 5, every training source)
# was chosen the same way, beside mean_logprob and length_ratio, among character bigrams, trigrams or jieba words,
# the closest 1 or 5, every training source or the real ones only (10 forms; AUC 0.79 to 0.87). On the 400 test
# sentences it was no clear gain (AUC 0.751 against 0.735, 90 % bootstrap interval of the difference -0.023 to
# +0.056; bad warned 82 % against 84 %, good warned 55 % against 62 %), so these three stay (docs/models.md).
BEFORE = ("mean_logprob", "min_logprob", "mean_entropy")
FIT_FEATURES = BEFORE
L2 = 10.0
L2_CHOICES = (1.0, 10.0)
FOLDS, REPEATS = 5, 10
BAD_WARNED_GOAL = 0.8  # the threshold warns at least this share of the fit set's bad outputs
GRAMMAR_SENTENCES = 200
BINS = 5  # the reliability diagram's bins of confidence, each 0.2 wide
BATCH = 50


def outputs(loaded: LoadedModel, pairs: list[tuple[str, str | list[str]]]) -> list[dict[str, Any]]:
    """Greedy output of each pair's source, its features, warnings and sentence chrF (against every reference given)."""
    rows = []
    for start in range(0, len(pairs), BATCH):
        chunk = pairs[start : start + BATCH]
        for (src, ref), done in zip(chunk, decode(loaded, [s for s, _ in chunk]), strict=True):
            assert done.judgement is not None
            references = [ref] if isinstance(ref, str) else list(ref)
            rows.append({"source": src, "reference": references[0], "references": len(references),
                         "output": done.text, "reason": done.reason,
                         "chrf": sacrebleu.sentence_chrf(done.text or "", references).score,
                         "features": done.judgement.features, "warnings": done.judgement.warnings})
    return rows


def real_sets(loaded: LoadedModel) -> dict[str, list[tuple[str, str | list[str]]]]:
    """The real sentences of the fit and of the report, each (source, reference or references).

    `hsk_valid` and `hsk_test`: the hsk task's, less the few whose reference is the package's stand-in for a
    translation ("placeholder": no output can be good against it). For a model trained with `tatoeba_holdout=1`,
    also the Tatoeba sentences kept out of its training (less any HSK sentence and any it trained on), with every translation Tatoeba
    gives: every other one in `tatoeba_fit`, the rest in `tatoeba_test`.
    """
    from modelcore.tasks.hsk import load_hsk_sentences
    from modelcore.tasks.tatoeba import held_out_sentences

    hsk = get_task("hsk", seed=0)
    stand_ins = {s.zh for s in load_hsk_sentences() if s.placeholder}
    sets: dict[str, list[tuple[str, str | list[str]]]] = {
        "hsk_valid": [(zh, en) for zh, en in hsk.valid if zh not in stand_ins],
        "hsk_test": [(zh, en) for zh, en in hsk.test if zh not in stand_ins]}
    options = dict(loaded.metrics.get("task_options") or {})
    if options.get("tatoeba_holdout"):
        trained = get_task("hsk", **options).train  # the few held-out sentences that are HSK or grammar ones too
        held = held_out_sentences(exclude=[s.zh for s in load_hsk_sentences()] + [zh for zh, _ in trained])
        sets["tatoeba_fit"], sets["tatoeba_test"] = held[0::2], held[1::2]
    return sets


def _good(rows: list[dict[str, Any]]) -> np.ndarray:
    return np.array([row["chrf"] >= GOOD_CHRF for row in rows])


def _matrix_of(rows: list[dict[str, Any]], names: tuple[str, ...]) -> np.ndarray:
    return np.array([[row["features"][name] for name in names] for row in rows], dtype=float)


def cross_validated_auc(real: list[dict[str, Any]], grammar: list[dict[str, Any]], names: tuple[str, ...],
                        l2: float) -> float:
    """Mean ROC AUC over REPEATS stratified FOLDS-fold splits of `real`, the grammar rows always in the fit."""
    good, x, x_grammar, good_grammar = _good(real), _matrix_of(real, names), _matrix_of(grammar, names), _good(grammar)
    rng = np.random.default_rng(0)  # the same folds for every candidate
    aucs = []
    for _ in range(REPEATS):
        fold = np.zeros(len(real), dtype=int)
        for label in (True, False):
            members = np.flatnonzero(good == label)
            rng.shuffle(members)
            fold[members] = np.arange(len(members)) % FOLDS
        score = np.zeros(len(real))
        for k in range(FOLDS):
            fit = fold != k
            weights, bias = fit_logistic(np.vstack([x[fit], x_grammar]),
                                         np.concatenate([good[fit], good_grammar]).astype(float), l2)
            score[~fit] = x[~fit] @ weights + bias
        auc = roc_auc(score, good)
        assert auc is not None, "cross-validation needs good and bad validation outputs"
        aucs.append(auc)
    return float(np.mean(aucs))


def select_features(real: list[dict[str, Any]], grammar: list[dict[str, Any]]) -> tuple[tuple[str, ...], float, float]:
    """Forward selection over FEATURES for each penalty: add the feature that raises the cross-validated AUC most,
    while it raises it by more than 0.002. The best (features, L2, AUC); prints each step."""
    best: tuple[tuple[str, ...], float, float] = ((), L2, 0.0)
    for l2 in L2_CHOICES:
        chosen: tuple[str, ...] = ()
        score = 0.0
        while candidates := [name for name in FEATURES if name not in chosen]:
            trial, name = max((cross_validated_auc(real, grammar, (*chosen, name), l2), name) for name in candidates)
            if trial <= score + 0.002:
                break
            chosen, score = (*chosen, name), trial
            print(f"  L2 {l2:g}: {', '.join(chosen)}: cross-validated AUC {score:.3f}", flush=True)
        if score > best[2]:
            best = (chosen, l2, score)
    return best


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = L2) -> tuple[np.ndarray, float]:
    """Newton's method on standardised features with an L2 penalty; weights and bias on the raw features."""
    mean, scale = x.mean(0), x.std(0)
    scale[scale == 0] = 1.0  # a feature constant over the fit set (no loop in it) gets no weight
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])  # (N, 1 + F)
    penalty = l2 * np.diag([0.0] + [1.0] * x.shape[1])
    w = np.zeros(z.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-z @ w))
        step = np.linalg.solve(z.T @ (z * (p * (1 - p))[:, None]) + penalty, z.T @ (p - y) + penalty @ w)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    weights = w[1:] / scale
    return weights, float(w[0] - (weights * mean).sum())


def choose_threshold(confidence: np.ndarray, good: np.ndarray) -> float:
    """Warn at least BAD_WARNED_GOAL of the bad, the fewest good: the middle of the best interval."""
    bad = np.sort(confidence[~good])
    need = int(np.ceil(BAD_WARNED_GOAL * len(bad)))
    low = float(bad[need - 1]) if need else 0.0  # a threshold just above it warns `need` bad outputs
    above = confidence[good & (confidence > low)]
    high = float(above.min()) if above.size else 1.0  # past the next good output, one more good one is warned
    return (low + high) / 2


def roc_auc(confidence: np.ndarray, good: np.ndarray) -> float | None:
    """The chance that a good output has a higher confidence than a bad one (ties half); None without both."""
    pos, neg = confidence[good], confidence[~good]
    if not pos.size or not neg.size:
        return None
    return float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())


def _share(flags: np.ndarray) -> float | None:
    return float(flags.mean()) if flags.size else None


def report(rows: list[dict[str, Any]], calibration: Calibration) -> dict[str, Any]:
    """AUC, the shares warned, and the reliability bins of one held-out set."""
    confidence = np.array([calibration.confidence(row["features"]) for row in rows])
    good = _good(rows)
    low = confidence < calibration.threshold
    # Repetition and unknown words come from the output and the source, whatever the threshold.
    other = np.array([bool(set(row["warnings"]) - {"low_confidence"}) for row in rows])
    edges = np.linspace(0, 1, BINS + 1)
    bins = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        inside = (confidence >= lo) & ((confidence < hi) | (hi == 1.0))
        if inside.any():
            bins.append({"low": float(lo), "high": float(hi), "n": int(inside.sum()),
                         "mean_confidence": float(confidence[inside].mean()), "good_share": float(good[inside].mean())})
    return {"sentences": len(rows), "good": int(good.sum()), "bad": int((~good).sum()),
            "auc": roc_auc(confidence, good),
            "bad_warned": _share(low[~good]), "good_warned": _share(low[good]),
            "bad_warned_any": _share((low | other)[~good]), "good_warned_any": _share((low | other)[good]),
            "reliability": bins}


def calibrate(name: str, features: tuple[str, ...] = FIT_FEATURES, l2: float = L2) -> dict[str, Any]:
    loaded = load_model(name)
    sets, grammar = real_sets(loaded), get_task("zh-en", seed=0)
    real_fit = outputs(loaded, sets["hsk_valid"]) + outputs(loaded, sets.get("tatoeba_fit", []))
    fit_rows = real_fit + outputs(loaded, grammar.valid[:GRAMMAR_SENTENCES])
    good = _good(fit_rows)
    weights, bias = fit_logistic(_matrix_of(fit_rows, features), good.astype(float), l2)
    fitted = Calibration(dict(zip(features, map(float, weights), strict=True)), bias, 0.5, loaded.checkpoint_hash)
    confidence = np.array([fitted.confidence(row["features"]) for row in fit_rows])
    calibration = Calibration(fitted.weights, bias, choose_threshold(confidence, good), loaded.checkpoint_hash)
    result = {
        "model": name, "decoding": "greedy",
        "good": {"metric": "sentence chrF (sacrebleu)", "at_least": GOOD_CHRF},
        "calibration": calibration.to_dict(),
        "fit": {"real": len(real_fit), "hsk": len(sets["hsk_valid"]), "tatoeba": len(sets.get("tatoeba_fit", [])),
                "generated": GRAMMAR_SENTENCES, "good": int(good.sum()),
                "bad": int((~good).sum()), "bad_warned_goal": BAD_WARNED_GOAL, "l2": l2},
        "test": report(outputs(loaded, sets["hsk_test"]), calibration),
        "grammar_test": report(outputs(loaded, grammar.test[:GRAMMAR_SENTENCES]), calibration),
    }
    if "tatoeba_test" in sets:
        result["tatoeba_test"] = report(outputs(loaded, sets["tatoeba_test"]), calibration)
    return result


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="shipped model names or model folders")
    parser.add_argument("--dry-run", action="store_true", help="print the figures, write nothing")
    parser.add_argument("--select", action="store_true",
                        help="choose the features and the penalty by cross-validation on validation sentences; write nothing")
    parser.add_argument("--features", help="comma-separated features instead of FIT_FEATURES (with --dry-run)")
    parser.add_argument("--l2", type=float, default=L2, help="the penalty (with --features)")
    args = parser.parse_args()
    if args.features and not args.dry_run:
        parser.error("--features only with --dry-run: the shipped calibration uses FIT_FEATURES")
    torch.set_num_threads(1)
    for name in args.models:
        if args.select:
            loaded = load_model(name)
            sets = real_sets(loaded)
            real = outputs(loaded, sets["hsk_valid"]) + outputs(loaded, sets.get("tatoeba_fit", []))
            grammar = outputs(loaded, get_task("zh-en", seed=0).valid[:GRAMMAR_SENTENCES])
            for names in (BEFORE, FIT_FEATURES):
                print(f"{name}: {', '.join(names)} at L2 {L2:g}: cross-validated AUC "
                      f"{cross_validated_auc(real, grammar, names, L2):.3f}")
            chosen, l2, auc = select_features(real, grammar)
            print(f"{name}: chosen {', '.join(chosen)} at L2 {l2:g}: cross-validated AUC {auc:.3f}")
            continue
        features = tuple(args.features.split(",")) if args.features else FIT_FEATURES
        result = calibrate(name, features, args.l2)
        test = result["test"]
        auc = "n/a (one class only)" if test["auc"] is None else f"{test['auc']:.3f}"
        print(f"{name}: threshold {result['calibration']['threshold']:.3f}; {test['sentences']} real test sentences "
              f"({test['good']} good): AUC {auc}, bad warned {_percent(test['bad_warned'])}, good warned "
              f"{_percent(test['good_warned'])} (any warning: {_percent(test['bad_warned_any'])} and "
              f"{_percent(test['good_warned_any'])}); grammar test sentences warned "
              f"{_percent(result['grammar_test']['good_warned'])}")
        if everyday := result.get("tatoeba_test"):
            print(f"{name}: {everyday['sentences']} held-out Tatoeba sentences ({everyday['good']} good): AUC "
                  f"{everyday['auc']:.3f}, bad warned {_percent(everyday['bad_warned'])}, good warned "
                  f"{_percent(everyday['good_warned'])}")
        if not args.dry_run:
            folder = load_model(name).path
            (folder / CALIBRATION_FILE).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
