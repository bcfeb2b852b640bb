"""The docs the lesson points to about the shipped models name every one of them and give each its own test split."""
from __future__ import annotations

import json
import re
from pathlib import Path

from modelcore.checkpoint import SHIPPED_DIR, shipped_models
from modelcore.tasks import TASK_NAMES

ROOT = Path(__file__).resolve().parents[3]


def test_the_cli_doc_names_every_shipped_model_and_every_task():
    doc = (ROOT / "docs/cli.md").read_text(encoding="utf-8")
    named = re.search(r"that ships with modelcore: (.*?) \(see", doc, re.S).group(1)
    assert set(re.findall(r"`([^`]+)`", named)) == set(shipped_models())
    tasks = re.search(r"`--task` is one of (.*?) \(see", doc, re.S).group(1)
    assert set(re.findall(r"`([^`]+)`", tasks)) == set(TASK_NAMES)


def test_the_models_doc_gives_each_models_test_split_its_own_size():
    doc = " ".join((ROOT / "docs/models.md").read_text(encoding="utf-8").split())
    sentence = re.search(r"Test figures are on each model's test split.*?;", doc).group(0)
    for name in shipped_models():
        n = json.loads((SHIPPED_DIR / name / "metrics.json").read_text(encoding="utf-8"))["test"]["n"]
        before = sentence[: sentence.index(f"`{name}`")]
        assert re.findall(r"\d+", before)[-1] == str(n), (name, n)  # the size named last before the model
