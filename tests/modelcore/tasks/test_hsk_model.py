"""The shipped real-sentence model: its figures are what evaluate gives on the real held-out sentences."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from modelcore.checkpoint import SHIPPED_DIR, load_model

ROOT = Path(__file__).resolve().parents[3]


def test_it_records_the_task_it_was_trained_on() -> None:
    metrics = load_model("zh-en-hsk").metrics
    assert metrics["task"] == "hsk" and metrics["task_options"] == {
        "generated": 10_000, "seed": 0, "tatoeba": 1, "real_repeat": 3, "tgt_vocab": 8000, "clean": 1,
        "tatoeba_holdout": 1}
    assert metrics["train"]["seed"] == 1  # the recipe's second seed of its weights, on the first seed's data
    assert metrics["test"]["n"] == 400
    assert sorted(p.name for p in (SHIPPED_DIR / "zh-en-hsk").iterdir()) == [
        "alignment.json", "calibration.json", "config.json", "coverage.json", "learning_curve.json", "metrics.json",
        "model.safetensors",
        "tokenizer.json",
    ]


@pytest.mark.slow
def test_evaluate_gives_the_shipped_figures_on_the_real_test_sentences() -> None:
    result = subprocess.run([sys.executable, "-m", "modelcore", "evaluate", "--model", "zh-en-hsk", "--json"],
                            capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    shipped = load_model("zh-en-hsk").metrics["test"]
    assert figures["n"] == shipped["n"] == 400
    for key in ("bleu", "exact_match", "token_accuracy"):
        assert figures[key] == pytest.approx(shipped[key], abs=1e-6)


def test_the_readme_quotes_its_figures() -> None:
    test = load_model("zh-en-hsk").metrics["test"]
    row = next(line for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
               if line.startswith("| `zh-en-hsk` | real"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[4:7] == [f"{test['bleu']:.2f}", f"{test['exact_match']:.3f}", f"{test['token_accuracy']:.4f}"]
    hsk_row = next(line for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
                   if re.match(r"\| `zh-en-hsk` \| \d", line))
    assert hsk_row.split("|")[2].strip() == f"{test['bleu']:.2f}"


@pytest.mark.slow
def test_the_readme_gives_every_models_figures_on_the_real_test_sentences() -> None:
    """The README's real-sentence table is what scripts/hsk_figures.py measures, row by row, for each zh-en model."""
    rows = {m.group(1): [c.strip() for c in m.group(2).split("|")]
            for m in re.finditer(r"^\| `([\w-]+)` \| (\d[^\n]*?) \|$", (ROOT / "README.md").read_text(encoding="utf-8"),
                                 re.MULTILINE)}
    assert {"zh-en-post", "zh-en-pre", "zh-en-hsk"} <= set(rows)
    result = subprocess.run([sys.executable, "scripts/hsk_figures.py", *sorted(rows), "--json"],
                            capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert result.returncode == 0, result.stderr
    measured = json.loads(result.stdout)
    for name, cells in rows.items():
        f = measured[name]
        assert f["n"] == 400
        assert cells == [f"{f['bleu']:.2f}", f"{f['chrf']:.1f}", f"{f['exact_match']:.3f}", f"{f['token_accuracy']:.3f}"], name
