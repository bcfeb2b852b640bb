"""Datasets the model learns: algorithmic tasks, a generated zh→en corpus, real HSK sentences, users' TSV corpora."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import partial
from typing import Any

from modelcore.tasks.algorithmic import addition_task, sequence_task
from modelcore.tasks.base import Pair, Task, split_pairs
from modelcore.tasks.corpus import CorpusError, load_tsv_corpus
from modelcore.tasks.hsk import HskDataError, hsk_task
from modelcore.tasks.zh_en import zh_en_task

__all__ = ["TASK_NAMES", "CorpusError", "HskDataError", "Pair", "Task", "get_task", "load_tsv_corpus", "split_pairs"]

_BUILDERS: dict[str, Callable[..., Task]] = {
    "copy": partial(sequence_task, "copy"),
    "reverse": partial(sequence_task, "reverse"),
    "sort": partial(sequence_task, "sort"),
    "add": addition_task,
    "zh-en": zh_en_task,
    "hsk": hsk_task,
}
TASK_NAMES: tuple[str, ...] = tuple(_BUILDERS)


def get_task(name: str, seed: int = 0, **options: Any) -> Task:
    """Build task `name`; the same name, seed and options always give the same splits."""
    builder = _BUILDERS.get(name)
    if builder is None:
        raise ValueError(f"unknown task {name!r} (choose from: {', '.join(TASK_NAMES)})")
    allowed = [p for p in inspect.signature(builder).parameters if p != "seed"]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValueError(f"task {name!r} has no option {', '.join(unknown)} (options: {', '.join(allowed)})")
    task = builder(seed=seed, **options)
    task.options = {"seed": seed, **options}
    return task
