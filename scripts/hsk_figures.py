"""Test figures of models on the real held-out HSK sentences (the hsk task's test split, seed 0).

    .venv/bin/python scripts/hsk_figures.py zh-en-post zh-en-pre var/models/zh-en-hsk [--json]

BLEU, chrF, exact match and token accuracy, greedy decoding, the same 400 sentences for every model,
whatever data it was trained on. Prints one line per model (or one JSON object with --json).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import sacrebleu
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from modelcore.checkpoint import load_model  # noqa: E402
from modelcore.tasks import get_task  # noqa: E402
from modelcore.training import evaluate  # noqa: E402
from modelcore.training.batching import encode_pairs  # noqa: E402
from modelcore.training.evaluation import greedy_outputs  # noqa: E402


def hsk_figures(name: str, pairs: list[tuple[str, str]]) -> dict[str, float]:
    """evaluate()'s figures on `pairs`, plus chrF of the same greedy outputs (the ones its BLEU scores)."""
    loaded = load_model(name)
    figures = evaluate(loaded.model, pairs, loaded.src_tokenizer, loaded.tgt_tokenizer)
    examples = encode_pairs(pairs, loaded.src_tokenizer, loaded.tgt_tokenizer, loaded.model.config.max_len)
    hypotheses = [loaded.tgt_tokenizer.decode(ids) for ids in greedy_outputs(loaded.model.eval(), examples)]
    figures["chrf"] = sacrebleu.corpus_chrf(hypotheses, [[t for _, t in pairs]]).score
    return {key: figures[key] for key in ("bleu", "chrf", "exact_match", "token_accuracy", "n")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="shipped model names or model folders")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    pairs = get_task("hsk", seed=0).test
    results = {name: hsk_figures(name, pairs) for name in args.models}
    if args.json:
        print(json.dumps(results))
    for name, f in results.items():
        if not args.json:
            print(f"{name}: BLEU {f['bleu']:.2f}, chrF {f['chrf']:.1f}, exact match {f['exact_match']:.3f}, "
                  f"token accuracy {f['token_accuracy']:.3f} (n={f['n']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
