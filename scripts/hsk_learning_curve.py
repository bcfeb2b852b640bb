"""What more real data does: zh-en-hsk's recipe on a quarter, a half and all of the HSK training sentences, then
with Tatoeba's pairs added.

    scripts/train_shipped.sh curve      # trains the comparison models into var/curve, then runs this script
    .venv/bin/python scripts/hsk_learning_curve.py --point 0.25=var/curve/mixed-q --point 0.5=var/curve/mixed-h \
        --point 1=var/curve/mixed-all --point 1=zh-en-hsk --real-only var/curve/real-all
    .venv/bin/python scripts/hsk_learning_curve.py --add-point zh-en-hsk   # measure one model, keep the file's others
    .venv/bin/python scripts/hsk_learning_curve.py --add-point zh-en-hsk --replace-last   # a retrained zh-en-hsk

Every model is scored by scripts/hsk_figures.py on the same 400 real held-out sentences, and its BLEU on 400 of
the zh-en grammar's test sentences. Writes modelcore/shipped/zh-en-hsk/learning_curve.json, which the model's card
draws.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hsk_figures import hsk_figures  # noqa: E402

from modelcore.checkpoint import SHIPPED_DIR, load_model  # noqa: E402
from modelcore.tasks import get_task  # noqa: E402
from webapp.registry.learning import CURVE_FILE  # noqa: E402  (the card reads the file this writes)


def real_pairs(options: dict) -> int:
    """How many distinct real pairs a model with these task options was trained on: HSK sentences and, with
    tatoeba=1, Tatoeba's (no generated or dictionary pairs; a repeated sentence counts once)."""
    real = {key: value for key, value in options.items() if key not in ("generated", "glosses", "cedict", "tgt_vocab")}
    return len(set(get_task("hsk", **real).train))


GRAMMAR_SENTENCES = 400


def measured(name: str, pairs: list[tuple[str, str]], grammar: list[tuple[str, str]]) -> dict:
    options = dict(load_model(name).metrics["task_options"])
    return {"real_pairs": real_pairs(options), "generated": int(options.get("generated", 0)),
            **hsk_figures(name, pairs), "grammar_bleu": hsk_figures(name, grammar)["bleu"]}


def described(point: dict) -> str:
    return (f"{point['real_pairs']} real + {point['generated']} generated: BLEU {point['bleu']:.2f}, "
            f"chrF {point['chrf']:.1f}, exact match {point['exact_match']:.3f}; "
            f"BLEU on the grammar's sentences {point['grammar_bleu']:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", action="append", metavar="FRACTION=MODEL",
                        help="a model trained on that share of the HSK training sentences (and the generated ones)")
    parser.add_argument("--real-only", metavar="MODEL", help="all the HSK sentences, nothing generated")
    parser.add_argument("--add-point", metavar="MODEL",
                        help="measure this model and add it to the file's points (the others are kept as measured)")
    parser.add_argument("--replace-last", action="store_true",
                        help="with --add-point: drop the point with the most real pairs first (the model it retrains)")
    parser.add_argument("--out", type=Path, default=SHIPPED_DIR / "zh-en-hsk" / CURVE_FILE)
    args = parser.parse_args()
    if not args.add_point and not (args.point and args.real_only):
        parser.error("give --point and --real-only, or --add-point")
    torch.set_num_threads(1)
    pairs = get_task("hsk", seed=0).test
    grammar = get_task("zh-en", seed=0).test[:GRAMMAR_SENTENCES]
    if args.add_point:
        result = json.loads(args.out.read_text(encoding="utf-8"))
        options = load_model(args.add_point).metrics["task_options"]
        point = {"fraction": float(options.get("train_fraction", 1.0)), **measured(args.add_point, pairs, grammar)}
        kept = sorted(result["points"], key=lambda p: p["real_pairs"])[: -1 if args.replace_last else None]
        result["points"] = sorted([*kept, point], key=lambda p: p["real_pairs"])
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(described(point))
        return 0
    points = []
    for spec in args.point:
        fraction, _, name = spec.partition("=")
        points.append({"fraction": float(fraction), **measured(name, pairs, grammar)})
    points.sort(key=lambda point: (point["fraction"], point["real_pairs"]))
    result = {"test_sentences": len(pairs), "grammar_sentences": len(grammar), "points": points,
              "real_only": measured(args.real_only, pairs, grammar)}
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    for point in [*points, result["real_only"]]:
        print(described(point))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
