"""The Task record every dataset produces, and the deterministic split all of them share."""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from modelcore.tokenization import Tokenizer

Pair = tuple[str, str]


@dataclass
class Task:
    """A named dataset of (source, target) pairs, split three ways, and how to tokenise each side."""

    name: str
    train: list[Pair]
    valid: list[Pair]
    test: list[Pair]
    src_kind: str = "word"  # "char" | "word" | "bpe", as in Tokenizer.train
    tgt_kind: str = "word"
    src_vocab_size: int | None = None  # None: every symbol seen (char/word); the BPE default for "bpe"
    tgt_vocab_size: int | None = None
    # Symbols put in the vocabulary even when the train split lacks them, so test never meets <unk>.
    src_alphabet: tuple[str, ...] = ()
    tgt_alphabet: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)  # what built it (seed included), for config.json

    def build_tokenizers(self, shared: bool = False) -> tuple[Tokenizer, Tokenizer]:
        """Source and target tokenizers trained on the train split plus the alphabets.

        shared: one vocabulary for both sides (the paper's shared BPE), learnt from sources and targets together,
        as three-way embedding tying needs; both sides must be read in tokens of one kind.
        """
        if shared:
            self.require_one_kind()
            texts = [*(s for s, _ in self.train), *(t for _, t in self.train)]
            alphabet = tuple(dict.fromkeys((*self.src_alphabet, *self.tgt_alphabet)))
            sizes = [size for size in (self.src_vocab_size, self.tgt_vocab_size) if size is not None]
            one = Tokenizer.train(_with_alphabet(texts, alphabet, self.src_kind), self.src_kind,
                                  max(sizes) if sizes else None)
            return one, one
        src = Tokenizer.train(
            _with_alphabet([s for s, _ in self.train], self.src_alphabet, self.src_kind),
            self.src_kind,
            self.src_vocab_size,
        )
        tgt = Tokenizer.train(
            _with_alphabet([t for _, t in self.train], self.tgt_alphabet, self.tgt_kind),
            self.tgt_kind,
            self.tgt_vocab_size,
        )
        return src, tgt

    def require_one_kind(self) -> None:
        """A ValueError unless both sides are read in tokens of one kind (what one shared vocabulary needs)."""
        if self.src_kind != self.tgt_kind:
            raise ValueError(f"--share-embeddings: {self.name} reads its source in {self.src_kind} tokens and its "
                             f"target in {self.tgt_kind} tokens, so the two sides cannot share one vocabulary")

def _with_alphabet(texts: list[str], alphabet: Sequence[str], kind: str) -> list[str]:
    """`texts` plus one line holding every alphabet symbol, joined as that kind reads them."""
    if not alphabet:
        return texts
    return [*texts, ("" if kind == "char" else " ").join(alphabet)]


def split_pairs(pairs: Sequence[Pair], n_valid: int, n_test: int, seed: int | str) -> tuple[list[Pair], ...]:
    """Shuffle with `seed`, then cut into (train, valid, test); distinct inputs give disjoint splits."""
    shuffled = list(pairs)
    random.Random(seed).shuffle(shuffled)
    test = shuffled[:n_test]
    valid = shuffled[n_test : n_test + n_valid]
    train = shuffled[n_test + n_valid :]
    return train, valid, test


_EN_TOKEN = re.compile(r"[a-z0-9]+(?:['’][a-z]+)*|[^\sa-z0-9]")


def normalise_english(text: str) -> str:
    """English as the word-level targets read it: 'Hello, teacher!' -> 'hello , teacher !'."""
    return " ".join(_EN_TOKEN.findall(unicodedata.normalize("NFC", text).lower().replace("’", "'")))
