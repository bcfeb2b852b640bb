"""The generated zh→en corpus: short sentences from a deterministic grammar (see lexicon.py)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from modelcore.tasks import lexicon as lx
from modelcore.tasks.base import Task, split_pairs

ZH_ORDER = ("time", "subject", "aux", "place", "verb", "object", "end")
EN_ORDER = ("subject", "aux", "verb", "object", "place", "time", "end")
# Words the grammar itself adds around the lexicon's.
_ZH_GRAMMAR = ("不", "没有", "会", "正在", "正", "在", "了", "的", "这", "那", "些", "。")
_EN_GRAMMAR = ("a", "an", "of", "not", "do", "does", "did", "will", "am", "is", "are", "the", ".")
# Grammar 2 says the past with 了 or 没有 alone and never ties an English word to a Chinese one that lacks it.
# Grammar 1 tied the past to a time phrase (了 only ever came with 昨天 and the like, so a model learned
# 了 -> "yesterday"); it is kept only to reproduce the data the shipped zh-en models were trained on.
GRAMMAR = 2
GRAMMARS = (1, 2)


@dataclass(frozen=True)
class Phrase:
    """One unit of the alignment: a Chinese span and the English span it translates to."""

    role: str  # one of ZH_ORDER
    zh: str
    en: str


@dataclass(frozen=True)
class Sentence:
    """A generated sentence as aligned phrases, kept in Chinese order."""

    phrases: tuple[Phrase, ...]
    tense: str

    @property
    def zh(self) -> str:
        return "".join(p.zh for p in self.phrases)

    @property
    def en(self) -> str:
        return " ".join(p.en for p in self.english_phrases())

    def english_phrases(self) -> list[Phrase]:
        """The same phrases in English order: time and place move behind the object."""
        return sorted(self.phrases, key=lambda p: EN_ORDER.index(p.role))

    def phrase(self, role: str) -> Phrase | None:
        return next((p for p in self.phrases if p.role == role), None)


@dataclass(frozen=True)
class NounPhrase:
    zh: str
    en: str
    person: int
    plural: bool


def sample_sentence(rng: random.Random, grammar: int = GRAMMAR) -> Sentence:
    """Draw one sentence: time, then tense, verb, subject, object, negation, place."""
    time = rng.choice(lx.TIMES) if rng.random() < 0.55 else None
    tense = time.tense if time else _untimed_tense(rng, grammar)
    # A verb that marks no past (喜欢) needs a time phrase to say it: 去年我喜欢猫, never 我喜欢了猫.
    verbs = [v for v in lx.VERBS if (v.ing or tense != "progressive") and (v.perfective or time or tense != "past")]
    verb = rng.choice(verbs if grammar >= 2 else [v for v in lx.VERBS if v.ing or tense != "progressive"])
    subject = _subject(rng, verb)
    obj = _object(rng, verb, subject)
    negated = rng.random() < 0.35
    # 他没有在公园里吃鱼 reads as "did not" and as "is not ...ing": without a time phrase to settle it, no place.
    ambiguous = grammar >= 2 and negated and tense in ("past", "progressive") and time is None
    place = rng.choice(lx.PLACES) if verb.ing and not ambiguous and rng.random() < 0.35 else None
    return compose(
        subject=subject, verb=verb, obj=obj, tense=tense, time=time, negated=negated, place=place, grammar=grammar
    )


def _untimed_tense(rng: random.Random, grammar: int) -> str:
    """The tense of a sentence without a time phrase: its verb group alone says it."""
    roll = rng.random()
    if grammar < 2:
        return "progressive" if roll < 0.3 else "present"  # grammar 1: 了 and 没有+verb only ever came with a time
    return "progressive" if roll < 0.25 else "past" if roll < 0.5 else "present"


def compose(
    *,
    subject: NounPhrase,
    verb: lx.Verb,
    obj: NounPhrase,
    tense: str = "present",
    time: lx.TimePhrase | None = None,
    negated: bool = False,
    place: tuple[str, str] | None = None,
    grammar: int = GRAMMAR,
) -> Sentence:
    """The sentence with exactly these parts, in both languages."""
    aux_zh, verb_zh, aux_en, verb_en = _verb_group(
        verb, tense, negated, subject, has_place=place is not None, grammar=grammar
    )
    phrases = [
        Phrase("time", time.zh, time.en) if time else None,
        Phrase("subject", subject.zh, subject.en),
        Phrase("aux", aux_zh, aux_en) if aux_zh else None,
        Phrase("place", *place) if place else None,
        Phrase("verb", verb_zh, verb_en),
        Phrase("object", obj.zh, obj.en),
        Phrase("end", "。", "."),
    ]
    return Sentence(tuple(p for p in phrases if p is not None), tense)


def _verb_group(
    verb: lx.Verb, tense: str, negated: bool, subject: NounPhrase, *, has_place: bool, grammar: int
) -> tuple[str, str, str, str]:
    """(Chinese auxiliary, Chinese verb, English auxiliary, English verb) for this tense and subject."""
    third_singular = subject.person == 3 and not subject.plural
    if tense == "present":
        if negated:
            return "不", verb.zh, "does not" if third_singular else "do not", verb.base
        return "", verb.zh, "", verb.third if third_singular else verb.base
    if tense == "past":
        if not verb.perfective and grammar >= 2:
            # 去年我不喜欢猫 "i did not like cats last year": the time phrase carries the past, 不 the negation.
            return ("不", verb.zh, "did not", verb.base) if negated else ("", verb.zh, "", verb.past)
        if negated:
            return "没有", verb.zh, "did not", verb.base
        return "", verb.zh + "了", "", verb.past
    if tense == "future":
        return ("不会" if negated else "会"), verb.zh, ("will not" if negated else "will"), verb.base
    be = "am" if subject.person == 1 and not subject.plural else "is" if third_singular else "are"
    # Progressive: 正在吃 / 没有在吃; a place phrase brings its own 在 (正在公园里吃).
    aux_zh = ("没有" if negated else "正") + ("" if has_place else "在")
    return aux_zh, verb.zh, f"{be} not" if negated else be, verb.ing


def _subject(rng: random.Random, verb: lx.Verb) -> NounPhrase:
    if rng.random() < 0.35:
        p = rng.choice(lx.PRONOUNS)
        return NounPhrase(p.zh, p.subject, p.person, p.plural)
    noun = rng.choice([n for n in lx.NOUNS if n.kinds & verb.subjects])
    return _noun_phrase(rng, noun, rng.choice(("number", "number", "demonstrative", "possessive")))


def _object(rng: random.Random, verb: lx.Verb, subject: NounPhrase) -> NounPhrase:
    if "pronoun" in verb.objects and rng.random() < 0.3:
        # "i help me" is not English: a first or second person does not act on itself here.
        choices = [p for p in lx.PRONOUNS if p.person == 3 or p.person != subject.person]
        p = rng.choice(choices)
        return NounPhrase(p.zh, p.object, p.person, p.plural)
    noun = rng.choice([n for n in lx.NOUNS if n.kinds & verb.objects])
    return _noun_phrase(rng, noun, rng.choice(("bare", "number", "number", "demonstrative", "possessive")))


def _noun_phrase(rng: random.Random, noun: lx.Noun, form: str) -> NounPhrase:
    """A noun phrase of `form` ("bare", "number", "demonstrative", "possessive") around `noun`."""
    fitting = [a for a in lx.ADJECTIVES if a.kind in noun.adjectives]
    adj = rng.choice(fitting) if fitting and rng.random() < 0.4 else None
    if form == "possessive" and adj and adj.zh.endswith("的"):
        adj = None  # 我的红色的车 stacks two 的; only bare adjectives follow a possessive
    adj_zh, adj_en = (adj.zh, adj.en + " ") if adj else ("", "")
    mass = not noun.plural
    count = 2 if form == "bare" and not mass else 1  # a bare object reads as a plural: 苹果 -> apples
    if form == "number" or (form == "demonstrative" and rng.random() < 0.5):
        count = rng.randint(1, len(lx.NUMBERS))
    plural = count > 1
    if mass:
        head = f"{adj_en}{noun.en}"
        if form not in ("bare", "possessive"):
            cup = lx.CONTAINERS[noun.measure][plural]
            head = f"{cup} of {head}"
    else:
        head = f"{adj_en}{noun.plural if plural else noun.en}"
    number_zh, number_en = lx.NUMBERS[count - 1]
    if form == "bare":
        zh, en = adj_zh + noun.zh, head
    elif form == "possessive":
        owner = rng.choice(lx.PRONOUNS)
        zh, en = f"{owner.zh}的{adj_zh}{noun.zh}", f"{owner.possessive} {head}"
    elif form == "number":
        zh, en = f"{number_zh}{noun.measure}{adj_zh}{noun.zh}", f"{_article(number_en, head)} {head}"
    else:
        this_zh, this_en, these_zh, these_en = rng.choice(lx.DEMONSTRATIVES)
        if not plural:
            zh, en = f"{this_zh}{noun.measure}{adj_zh}{noun.zh}", f"{this_en} {head}"
        elif mass or rng.random() < 0.5:
            # 这两只猫 "these two cats"; mass nouns keep their container: 这两杯茶 "these two cups of tea"
            zh, en = f"{this_zh}{number_zh}{noun.measure}{adj_zh}{noun.zh}", f"{these_en} {number_en} {head}"
        else:
            zh, en = f"{these_zh}{adj_zh}{noun.zh}", f"{these_en} {head}"  # 这些猫 "these cats"
    return NounPhrase(zh, en, 3, plural)


def _article(number_en: str, head: str) -> str:
    return "an" if number_en == "a" and head[0] in "aeiou" else number_en


def generate_sentences(n: int, seed: int = 0, *, max_zh_chars: int = 20, grammar: int = GRAMMAR) -> list[Sentence]:
    """`n` sentences with distinct Chinese sides, the same for the same seed and grammar."""
    if grammar not in GRAMMARS:
        raise ValueError(f"unknown grammar {grammar!r} (choose from: {', '.join(map(str, GRAMMARS))})")
    rng = random.Random(f"zh-en:{seed}")
    seen: dict[str, Sentence] = {}
    attempts = 0
    while len(seen) < n:
        attempts += 1
        if attempts > 50 * n + 10_000:
            raise ValueError(f"could not draw {n} distinct sentences of at most {max_zh_chars} characters")
        sentence = sample_sentence(rng, grammar)
        zh = sentence.zh
        if len(zh) > max_zh_chars:
            continue
        if zh in seen and seen[zh].en != sentence.en:
            raise RuntimeError(f"ambiguous grammar: {zh} -> {seen[zh].en!r} and {sentence.en!r}")
        seen.setdefault(zh, sentence)
    return list(seen.values())


def zh_en_task(
    seed: int = 0,
    *,
    n_train: int = 20_000,
    n_valid: int = 1_000,
    n_test: int = 1_000,
    max_zh_chars: int = 20,
    grammar: int = GRAMMAR,
) -> Task:
    """`zh-en`: Chinese characters in, lower-case tokenised English words out."""
    sentences = generate_sentences(n_train + n_valid + n_test, seed, max_zh_chars=max_zh_chars, grammar=grammar)
    pairs = [(s.zh, s.en) for s in sentences]
    train, valid, test = split_pairs(pairs, n_valid, n_test, f"zh-en:{seed}:split")
    src_alphabet, tgt_alphabet = alphabets()
    return Task(
        "zh-en", train, valid, test, "char", "word", src_alphabet=src_alphabet, tgt_alphabet=tgt_alphabet
    )


def lexicon_words() -> frozenset[str]:
    """Every Chinese word the grammar puts together (time phrases and places whole)."""
    words = {*_ZH_GRAMMAR, *lx.CONTAINERS, *(w for w, _ in lx.NUMBERS), *(d[i] for d in lx.DEMONSTRATIVES for i in (0, 2))}
    words |= {w for n in lx.NOUNS for w in (n.zh, n.measure)}
    words |= {a.zh for a in lx.ADJECTIVES} | {a.zh.removesuffix("的") for a in lx.ADJECTIVES}
    words |= {v.zh for v in lx.VERBS} | {p.zh for p in lx.PRONOUNS} | {t.zh for t in lx.TIMES}
    return frozenset(words | {zh for zh, _ in lx.PLACES})


def alphabets() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Every Chinese character and English word the grammar can produce, sorted."""
    zh_words = [
        *_ZH_GRAMMAR,
        *lx.CONTAINERS,
        *(w for _, w in lx.NUMBERS),
        *(d[0] + d[2] for d in lx.DEMONSTRATIVES),
    ]
    en_words = [*_EN_GRAMMAR, *(w for c in lx.CONTAINERS.values() for w in c), *(w for _, w in lx.NUMBERS)]
    en_words += [w for d in lx.DEMONSTRATIVES for w in (d[1], d[3])]
    for n in lx.NOUNS:
        zh_words += [n.zh, n.measure]
        en_words += [n.en, n.plural]
    for a in lx.ADJECTIVES:
        zh_words.append(a.zh)
        en_words.append(a.en)
    for v in lx.VERBS:
        zh_words.append(v.zh)
        en_words += [v.base, v.third, v.past, v.ing]
    for p in lx.PRONOUNS:
        zh_words.append(p.zh)
        en_words += [p.subject, p.object, p.possessive]
    for t in lx.TIMES:
        zh_words.append(t.zh)
        en_words.append(t.en)
    for zh, en in lx.PLACES:
        zh_words.append(zh)
        en_words.append(en)
    zh_chars = sorted(set("".join(zh_words)))
    en_tokens = sorted({w for phrase in en_words for w in phrase.split()})
    return tuple(zh_chars), tuple(en_tokens)
