"""Tokenizers: character-level, word-level and BPE, all sharing four fixed special ids."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers, trainers
from tokenizers import Tokenizer as HFTokenizer

PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)  # trainers assign ids in this order, so the ids above hold
KINDS = ("char", "word", "bpe")
DEFAULT_BPE_VOCAB_SIZE = 2000  # large enough for a classroom corpus, small enough to train on a CPU
_NO_LIMIT = 1_000_000  # "keep every symbol seen" for char and word vocabularies
# Pad, bos and eos are framing, never text; <unk> stays visible so a student sees what the model could not spell.
_HIDDEN_IDS = frozenset({PAD_ID, BOS_ID, EOS_ID})


class SourceError(ValueError):
    """A source sentence the model cannot read; `code` says why ("empty_source", "source_too_long")."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def check_source(ids: list[int], max_len: int | None = None) -> list[int]:
    """A source's ids (ending with <eos>) as they are, or SourceError when empty or longer than max_len."""
    if not ids:
        raise SourceError("empty_source", "the source is empty: nothing to translate")
    if max_len is not None and len(ids) > max_len:
        raise SourceError("source_too_long", f"the source has {len(ids)} tokens; the model takes at most {max_len}")
    return ids


class Tokenizer:
    """A Hugging Face `tokenizers.Tokenizer` plus the kind that decides how tokens join back into text."""

    def __init__(self, hf: HFTokenizer, kind: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown tokenizer kind {kind!r} (choose from: {', '.join(KINDS)})")
        self.hf = hf
        # Text that spells a special token ("<eos>" typed by a student) is text, not a control id:
        # it encodes to its characters, so it is neither dropped on decoding nor ends a source early.
        self.hf.encode_special_tokens = True
        self.kind = kind

    @classmethod
    def train(cls, texts: Iterable[str], kind: str = "char", vocab_size: int | None = None) -> Tokenizer:
        """Learn a vocabulary of `kind` from `texts`; `vocab_size` counts the four special tokens."""
        if kind not in KINDS:
            raise ValueError(f"unknown tokenizer kind {kind!r} (choose from: {', '.join(KINDS)})")
        if vocab_size is not None and vocab_size <= len(SPECIAL_TOKENS):
            raise ValueError(f"vocab_size must be more than {len(SPECIAL_TOKENS)}, got {vocab_size}")
        hf = _empty_tokenizer(kind)
        special = list(SPECIAL_TOKENS)
        trainer: trainers.Trainer
        if kind == "bpe":
            size = vocab_size or DEFAULT_BPE_VOCAB_SIZE
            trainer = trainers.BpeTrainer(vocab_size=size, special_tokens=special, show_progress=False)
        else:
            trainer = trainers.WordLevelTrainer(
                vocab_size=vocab_size or _NO_LIMIT, special_tokens=special, show_progress=False
            )
        hf.train_from_iterator(texts, trainer=trainer)
        return cls(hf, kind)

    @property
    def vocab_size(self) -> int:
        """Number of ids, special tokens included."""
        return self.hf.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str) -> list[int]:
        """Ids of `text`, without <bos>/<eos>; anything unseen in training becomes UNK_ID."""
        return self.hf.encode(text, add_special_tokens=False).ids

    def source_ids(self, text: str, max_len: int | None = None, *, truncate: bool = False) -> list[int]:
        """A source sentence as the model reads it, in training and decoding alike: its ids, then <eos>.

        max_len (the model's positions) bounds the result: a longer or empty source is refused
        (check_source), or, with truncate, cut to fit as training does with every pair of its corpus.
        """
        ids = self.encode(text)
        if truncate:
            return [*(ids[: max_len - 1] if max_len is not None else ids), EOS_ID]
        return check_source([*ids, EOS_ID] if ids and text.strip() else [], max_len)

    def tokens(self, text: str) -> list[str]:
        """The token strings `encode` would give ids for."""
        return self.hf.encode(text, add_special_tokens=False).tokens

    def decode(self, ids: Iterable[int]) -> str:
        """Text of `ids`, dropping <pad>/<bos>/<eos>; an unknown id reads as <unk>."""
        return self.join([self.id_to_token(int(i)) for i in ids if int(i) not in _HIDDEN_IDS])

    def join(self, tokens: list[str]) -> str:
        """Token strings (no special ones) back into text, as decode() joins them.

        For a text that grows one token at a time: keep its tokens and join them, instead of
        looking every id up again at each step.
        """
        if self.kind == "char":
            return "".join(tokens)  # spaces are tokens of their own at char level
        if self.kind == "word":
            return " ".join(tokens)
        return self.hf.decoder.decode(tokens)

    def id_to_token(self, i: int) -> str:
        """Token string of id `i` (<unk> for an id outside the vocabulary)."""
        token = self.hf.id_to_token(i)
        return UNK if token is None else token

    def token_to_id(self, t: str) -> int | None:
        """Id of token `t`, or None when it is not in the vocabulary."""
        return self.hf.token_to_id(t)

    def to_str(self) -> str:
        """JSON holding the kind and the Hugging Face tokenizer."""
        return json.dumps({"kind": self.kind, "tokenizer": json.loads(self.hf.to_str())}, ensure_ascii=False)

    @classmethod
    def from_str(cls, s: str) -> Tokenizer:
        """Inverse of `to_str`."""
        data = json.loads(s)
        if not isinstance(data, dict) or "kind" not in data or "tokenizer" not in data:
            raise ValueError(
                "not an EncDec Lab tokenizer: expected a JSON object with 'kind' and 'tokenizer'"
            )
        return cls(HFTokenizer.from_str(json.dumps(data["tokenizer"])), data["kind"])

    def save(self, path: str | Path) -> None:
        """Write `to_str()` to `path` (UTF-8)."""
        Path(path).write_text(self.to_str(), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Tokenizer:
        """Read a tokenizer written by `save`."""
        return cls.from_str(Path(path).read_text(encoding="utf-8"))

    def __repr__(self) -> str:
        return f"Tokenizer(kind={self.kind!r}, vocab_size={self.vocab_size})"


def _empty_tokenizer(kind: str) -> HFTokenizer:
    """An untrained pipeline: NFC, then split into characters, words or Metaspace pieces."""
    if kind == "bpe":
        hf = HFTokenizer(models.BPE(unk_token=UNK))
        hf.pre_tokenizer = pre_tokenizers.Metaspace()
        hf.decoder = decoders.Metaspace()  # "▁the ▁cat" -> "the cat": natural text back
    else:
        hf = HFTokenizer(models.WordLevel(unk_token=UNK))
        if kind == "char":
            # Every character is a token, spaces included, so "a b" round-trips.
            hf.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
        else:
            hf.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    hf.normalizer = normalizers.NFC()  # one code point sequence per visible character
    return hf
