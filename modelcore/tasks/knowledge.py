"""What a model knows of a source text: the spans its tokenizer (or a grammar's lexicon) has never seen.

Read before a decode, in the web process too: it needs the model's tokenizer.json, not its weights.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from modelcore.folder import TOKENIZER_FILE
from modelcore.tokenization import UNK_ID, Tokenizer


@dataclass(frozen=True)
class Span:
    """A run of the source text, known to the model or not."""

    text: str
    known: bool


def read_source_tokenizer(folder: str | Path) -> Tokenizer:
    """The source tokenizer of a model folder (its tokenizer.json), without loading any weights."""
    data = json.loads((Path(folder) / TOKENIZER_FILE).read_text(encoding="utf-8"))
    return Tokenizer.from_str(json.dumps(data["source"]))


def known_spans(text: str, tokenizer: Tokenizer, lexicon: Collection[str] = ()) -> list[Span]:
    """`text` cut into known and unknown spans, joined back it is `text` again.

    A character or word is unknown when the tokenizer reads it as <unk>; with a `lexicon` (a grammar
    model's words), also when no lexicon word in the text covers it: 他没有吃饭 has 饭, a character the
    model knows from 米饭 but no word of its grammar.
    """
    known = [True] * len(text)
    encoding = tokenizer.hf.encode(text, add_special_tokens=False)
    for token_id, (start, end) in zip(encoding.ids, encoding.offsets, strict=True):
        if token_id == UNK_ID:
            known[start:end] = [False] * (end - start)
    if lexicon:
        covered = _lexicon_cover(text, set(lexicon))
        known = [k and c for k, c in zip(known, covered, strict=True)]
    for i, char in enumerate(text):
        if char.isspace():
            known[i] = True  # a space is never the word a student has to change
    spans: list[Span] = []
    for char, flag in zip(text, known, strict=True):
        if spans and spans[-1].known == flag:
            spans[-1] = Span(spans[-1].text + char, flag)
        else:
            spans.append(Span(char, flag))
    return spans


def _lexicon_cover(text: str, lexicon: set[str]) -> list[bool]:
    """For each character: does some lexicon word found in `text` cover it (正在家: 正在 and 在家 both count)."""
    longest = max(map(len, lexicon))
    covered = [False] * len(text)
    for i in range(len(text)):
        for size in range(1, min(longest, len(text) - i) + 1):
            if text[i : i + size] in lexicon:
                covered[i : i + size] = [True] * size
    return covered


def unknown_words(spans: list[Span]) -> list[str]:
    """The unknown spans' texts, each once, in order."""
    return list(dict.fromkeys(s.text.strip() for s in spans if not s.known and s.text.strip()))
