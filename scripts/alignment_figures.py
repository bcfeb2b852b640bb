"""Write the zh-en-hsk model card's alignment figure: modelcore/shipped/zh-en-hsk/alignment.json.

    .venv/bin/python scripts/alignment_figures.py [MODEL] [--out PATH]

For each decoder layer and head, how often the cross-attention's strongest character for an English word of the
reference translation lies in a Chinese word whose gloss contains it (modelcore.experiments.alignment), on the
hsk task's 400 test sentences (seed 0), with the chance rate and what was counted.
tests/modelcore/experiments/test_alignment.py recomputes it from the shipped model and requires the same figures.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from modelcore.checkpoint import resolve_model_path  # noqa: E402
from modelcore.experiments.alignment import ALIGNMENT_FILE, hsk_alignment_figures  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default="zh-en-hsk", help="a shipped model's name or a model folder")
    parser.add_argument("--out", type=Path, help=f"where to write (default: the model folder's {ALIGNMENT_FILE})")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    figures = hsk_alignment_figures(args.model)
    out = args.out or resolve_model_path(args.model) / ALIGNMENT_FILE
    out.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    layers = " | ".join(" ".join(f"{rate:.0%}" for rate in heads) for heads in figures["heads"])
    print(f"{out}: heads {layers}; mean over heads {' '.join(f'{r:.0%}' for r in figures['mean_over_heads'])}; "
          f"chance {figures['chance']:.1%}; {figures['counted_words']} words counted")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
