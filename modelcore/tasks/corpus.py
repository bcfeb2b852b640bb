"""A user's parallel corpus: UTF-8 TSV, one "source<TAB>target" pair a line, checked line by line."""

from __future__ import annotations

import os
import random
import re
import unicodedata
from pathlib import Path

from modelcore.tasks.base import Pair, Task

MIN_PAIRS = 3  # one each for train, valid and test
_SHOWN_REASONS = 20  # past this many, the message lists only line numbers, so it stays readable
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # tab is the separator, so it is allowed
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


class CorpusError(ValueError):
    """A corpus with malformed lines; `errors` lists every one as (line number from 1, reason)."""

    def __init__(self, errors: list[tuple[int, str]]) -> None:
        self.errors = errors
        super().__init__(_describe(errors))


def _describe(errors: list[tuple[int, str]]) -> str:
    parts = [reason if line == 0 else f"line {line}: {reason}" for line, reason in errors[:_SHOWN_REASONS]]
    rest = [str(line) for line, _ in errors[_SHOWN_REASONS:]]
    if rest:
        parts.append(f"{len(rest)} more malformed lines: {', '.join(rest)}")
    return "; ".join(parts)


def load_tsv_corpus(
    path_or_text: str | os.PathLike[str] | bytes,
    *,
    max_line_chars: int = 1000,
    name: str = "corpus",
    seed: int = 0,
    src_kind: str = "auto",
    tgt_kind: str = "auto",
) -> Task:
    """Parse a TSV corpus into a Task split 90/5/5 by source sentence; raise CorpusError naming every bad line.

    `path_or_text` is the file's bytes, a path, or the text itself (a str holding a tab or a newline).
    Blank lines are skipped. A kind "auto" side is "char" when it is mostly CJK, else "bpe".
    """
    pairs = parse_tsv(_read(path_or_text), max_line_chars=max_line_chars)
    by_source: dict[str, list[Pair]] = {}
    for pair in dict.fromkeys(pairs):  # identical pairs once, in file order
        by_source.setdefault(pair[0], []).append(pair)
    sources = list(by_source)
    if len(sources) < MIN_PAIRS:
        raise CorpusError([(0, f"need at least {MIN_PAIRS} distinct source sentences, found {len(sources)}")])
    # Split by source sentence, so a source with several targets never straddles train and test.
    random.Random(f"{name}:{seed}:split").shuffle(sources)
    n_held = max(1, round(0.05 * len(sources)))
    groups = (sources[2 * n_held :], sources[n_held : 2 * n_held], sources[:n_held])
    train, valid, test = ([p for s in group for p in by_source[s]] for group in groups)
    return Task(
        name=name,
        train=train,
        valid=valid,
        test=test,
        src_kind=_kind(src_kind, [s for s, _ in train]),
        tgt_kind=_kind(tgt_kind, [t for _, t in train]),
        options={"seed": seed},
    )


def parse_tsv(data: bytes, *, max_line_chars: int = 1000) -> list[Pair]:
    """Every pair in `data`, or CorpusError listing every malformed line."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]  # a UTF-8 byte order mark, as some editors write
    pairs: list[Pair] = []
    errors: list[tuple[int, str]] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        result = _parse_line(raw.removesuffix(b"\r"), max_line_chars)
        if isinstance(result, str):
            errors.append((number, result))
        elif result is not None:
            pairs.append(result)
    if errors:
        raise CorpusError(errors)
    if not pairs:
        raise CorpusError([(0, "the corpus is empty: no source<TAB>target lines")])
    return pairs


def _parse_line(raw: bytes, max_line_chars: int) -> Pair | str | None:
    """The pair on one line, None for a blank line, or the reason it is malformed."""
    if b"\x00" in raw:
        return "contains a NUL byte (is this a binary file?)"
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1})"
    if len(line) > max_line_chars:
        return f"{len(line)} characters, more than the limit of {max_line_chars}"
    if bad := _CONTROL.search(line):
        return f"contains control character U+{ord(bad.group()):04X}"
    if not line.strip():
        return None
    columns = line.split("\t")
    if len(columns) != 2:
        return f"expected 2 tab-separated columns, got {len(columns)}"
    source, target = (unicodedata.normalize("NFC", c.strip()) for c in columns)
    if not source and not target:
        return "empty source and empty target"
    if not source:
        return "empty source"
    if not target:
        return "empty target"
    return source, target


def _read(path_or_text: str | os.PathLike[str] | bytes) -> bytes:
    if isinstance(path_or_text, bytes):
        return path_or_text
    if isinstance(path_or_text, str) and (path_or_text == "" or "\t" in path_or_text or "\n" in path_or_text):
        return path_or_text.encode("utf-8")
    return Path(path_or_text).read_bytes()


def _kind(kind: str, texts: list[str]) -> str:
    """`kind` itself, or for "auto": "char" for mostly-CJK text (no spaces between words), else "bpe"."""
    if kind != "auto":
        return kind
    letters = "".join(texts).replace(" ", "")
    cjk = len(_CJK.findall(letters))
    return "char" if letters and cjk >= 0.3 * len(letters) else "bpe"
