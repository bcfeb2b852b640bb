"""Uploaded corpora: checked line by line, then stored under MODEL_STORE/datasets (nothing stored if bad)."""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from modelcore.tasks import CorpusError, load_tsv_corpus
from modelcore.tasks.corpus import parse_tsv
from webapp.training.models import Dataset
from webapp.training.spec import MAX_LINE_CHARS

SHOWN_PROBLEMS = 20  # beyond this many bad lines, the rest are listed by number only


def dataset_upload(*, name: str, filename: str, data: bytes, owner: Any) -> Dataset:
    """Check a TSV corpus and store it; CorpusError (every bad line with its number) stores nothing."""
    pairs = parse_tsv(data, max_line_chars=MAX_LINE_CHARS)
    task = load_tsv_corpus(data, name=name, max_line_chars=MAX_LINE_CHARS)  # enough distinct sentences to split
    digest = hashlib.sha256(data).hexdigest()
    relative = Path("datasets") / f"{digest[:16]}-{name}.tsv"
    with transaction.atomic():
        dataset = Dataset.objects.create(
            name=name, original_filename=filename[:255], path=str(relative), sha256=digest, size_bytes=len(data),
            n_pairs=len(pairs), n_train=len(task.train), n_valid=len(task.valid), n_test=len(task.test), owner=owner,
        )
        _write_atomically(Path(settings.MODEL_STORE) / relative, data)
    return dataset


def corpus_problems(error: CorpusError) -> list[str]:
    """The reasons to show beside the file field: one per bad line, the tail by line number only."""
    shown = [reason if line == 0 else f"line {line}: {reason}" for line, reason in error.errors[:SHOWN_PROBLEMS]]
    rest = [str(line) for line, _ in error.errors[SHOWN_PROBLEMS:]]
    if rest:
        shown.append(f"{len(rest)} more malformed lines: {', '.join(rest[:200])}{' …' if len(rest) > 200 else ''}")
    return shown


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
